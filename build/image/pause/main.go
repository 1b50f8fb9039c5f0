// Command pause is the test cluster's sandbox ("pause") container: it holds
// a pod's namespaces open, reaps the zombies of the pod's other processes
// when it is their parent, and exits 0 on SIGINT or SIGTERM. .ci/cluster.sh
// packs it with build/image as the kubelet's pod-infra image, which the
// cluster could otherwise only pull from a registry.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range sigs {
		if sig != syscall.SIGCHLD {
			return
		}
		for {
			var ws syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}
