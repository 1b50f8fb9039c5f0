package atomicfile

// sysSyncfs is syncfs(2)'s number (package syscall lacks it on 386).
const sysSyncfs = 344
