//go:build linux

package atomicfile

import (
	"os"
	"syscall"
)

// syncFiles makes the files durable with one syncfs(2) per filesystem
// that holds one of dirs (the files' directories): a single journal
// commit instead of one per file.
func syncFiles(_ []string, dirs []string) error {
	seen := map[uint64]bool{}
	for _, d := range dirs {
		if err := syncfsOnce(d, seen); err != nil {
			return err
		}
	}
	return nil
}

func syncfsOnce(dir string, seen map[uint64]bool) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return &os.PathError{Op: "fstat", Path: dir, Err: err}
	}
	if seen[uint64(st.Dev)] {
		return nil
	}
	seen[uint64(st.Dev)] = true
	if _, _, errno := syscall.Syscall(sysSyncfs, f.Fd(), 0, 0); errno != 0 {
		return &os.PathError{Op: "syncfs", Path: dir, Err: errno}
	}
	return nil
}
