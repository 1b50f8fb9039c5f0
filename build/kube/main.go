// Command kube is the one-node test cluster of .ci/cluster.sh in a single
// binary: kube-apiserver, kube-controller-manager, kube-scheduler, kubelet,
// kube-proxy and kubectl from k8s.io/kubernetes, etcd from its server
// module, and a CoreDNS with only the plugins the cluster uses. It runs the
// program its name (argv[0], through a symlink) or its first argument
// names.
//
// One binary instead of eight: the packages they share are compiled once
// and linked once, which is most of the cold build on two cores, and the
// cache holds one file. Nothing here is part of Brainstem; .ci/build-kube.sh
// builds it outside the repository.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	_ "time/tzdata" // CronJob time zones, as kube-apiserver's own main

	"github.com/spf13/cobra"
	"go.etcd.io/etcd/server/v3/etcdmain"
	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	kubectl "k8s.io/kubectl/pkg/cmd"
	kubectlutil "k8s.io/kubectl/pkg/cmd/util"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	proxy "k8s.io/kubernetes/cmd/kube-proxy/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"

	"github.com/coredns/coredns/coremain"
	// The CoreDNS plugins of the cluster's Corefile, and no others: no
	// forward, so a name outside the cluster is never looked up elsewhere.
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"
)

var programs = map[string]func() int{
	"kube-apiserver":          func() int { return cli.Run(apiserver.NewAPIServerCommand()) },
	"kube-controller-manager": func() int { return cli.Run(controllermanager.NewControllerManagerCommand()) },
	"kube-scheduler":          func() int { return cli.Run(scheduler.NewSchedulerCommand()) },
	"kubelet":                 func() int { return cli.Run(kubelet.NewKubeletCommand(context.Background())) },
	"kube-proxy":              func() int { return cli.Run(proxy.NewProxyCommand()) },
	"kubectl":                 runKubectl,
	"etcd":                    func() int { etcdmain.Main(os.Args); return 0 },
	"coredns":                 func() int { coremain.Run(); return 0 },
}

func runKubectl() int {
	logs.GlogSetter(kubectl.GetLogVerbosity(os.Args)) //nolint:errcheck // as kubectl's own main
	var command *cobra.Command = kubectl.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		kubectlutil.CheckErr(err)
	}
	return 0
}

func main() {
	name := filepath.Base(os.Args[0])
	if _, ok := programs[name]; !ok && len(os.Args) > 1 {
		// kube PROGRAM args...: the program sees itself as argv[0].
		name = os.Args[1]
		os.Args = append([]string{name}, os.Args[2:]...)
	}
	run, ok := programs[name]
	if !ok {
		names := make([]string, 0, len(programs))
		for n := range programs {
			names = append(names, n)
		}
		fmt.Fprintf(os.Stderr, "usage: kube PROGRAM [args] (or a symlink named PROGRAM); PROGRAM is one of %s\n", strings.Join(names, ", "))
		os.Exit(2)
	}
	os.Exit(run())
}
