package faults

import "syscall"

// childAttr makes a child process die with the test binary, so a crashed or
// interrupted test leaves no process behind.
func childAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
