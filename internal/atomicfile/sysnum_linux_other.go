//go:build linux && !amd64 && !386

package atomicfile

import "syscall"

// sysSyncfs is syncfs(2)'s number.
const sysSyncfs = syscall.SYS_SYNCFS
