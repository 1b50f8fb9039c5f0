package atomicfile

// sysSyncfs is syncfs(2)'s number (package syscall lacks it on amd64).
const sysSyncfs = 306
