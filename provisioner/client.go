package provisioner

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
)

// ProtobufConfig returns a copy of c for the clientsets of built-in types (Options.Kube and
// Options.Events) that talks protobuf, as kube-scheduler, kube-controller-manager and the
// kubelet do: the API server encodes each watch event once per encoding its watchers ask for, so a
// JSON watcher of every pod makes it encode every pod change twice, and protobuf is cheaper to
// decode on this side too. JSON stays accepted. The dynamic client of the launch records and the
// other custom resources keeps JSON (custom resources have no protobuf encoding).
func ProtobufConfig(c *rest.Config) *rest.Config {
	out := rest.CopyConfig(c)
	out.ContentType = runtime.ContentTypeProtobuf
	out.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return out
}
