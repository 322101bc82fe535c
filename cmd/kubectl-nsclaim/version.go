/*
Copyright 2026 The nsclaim Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
	"k8s.io/client-go/discovery"
)

// version is the plugin's release, set at build time (hack/plugin-dist.sh: -X main.version=VERSION).
var version = ""

// pluginVersion is version, else the module version Go recorded (go install ...@vX), else "dev".
func pluginVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

func newVersionCommand(o *options) *cobra.Command {
	var clientOnly bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version and, when the API server is reachable, the cluster's",
		Args:  args(0, 0),
		RunE: func(_ *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(o.out, "kubectl-nsclaim: %s (%s/%s)\n", pluginVersion(), runtime.GOOS, runtime.GOARCH)
			if err != nil || clientOnly {
				return err
			}
			cfg, err := o.flags.ToRESTConfig()
			if err != nil {
				o.logf("kubernetes: unknown (%v)", err)
				return nil
			}
			dc, err := discovery.NewDiscoveryClientForConfig(cfg)
			if err != nil {
				return err
			}
			sv, err := dc.ServerVersion()
			if err != nil {
				o.logf("kubernetes: unknown (%v)", err)
				return nil
			}
			_, err = fmt.Fprintf(o.out, "kubernetes: %s\n", sv.GitVersion)
			return err
		},
	}
	cmd.Flags().BoolVar(&clientOnly, "client", false, "print only the plugin's version; do not contact the API server")
	return cmd
}
