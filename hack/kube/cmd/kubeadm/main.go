// Command kubeadm is the upstream kubeadm, built from its Go module: the kind node image
// (hack/kind-node-image.sh) carries it, as kind's own node images do.
package main

import (
	"k8s.io/kubernetes/cmd/kubeadm/app"
	utilerrors "k8s.io/kubernetes/cmd/kubeadm/app/util/errors"
)

func main() {
	utilerrors.HandleError(app.Run())
}
