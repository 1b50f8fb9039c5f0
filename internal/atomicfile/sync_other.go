//go:build !linux

package atomicfile

import "os"

// syncFiles makes the files durable with an fsync each (no syncfs(2)
// outside Linux).
func syncFiles(tmps []string, _ []string) error {
	for _, t := range tmps {
		f, err := os.OpenFile(t, os.O_RDWR, 0)
		if err != nil {
			return err
		}
		err = f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}
