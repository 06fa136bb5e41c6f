module cni-chainer.local/tools/cluster/cni-load

go 1.26.0

require (
	github.com/containerd/go-cni v1.1.13
	github.com/containernetworking/cni v1.3.0
)

require (
	github.com/petermattis/goid v0.0.0-20240813172612-4fcff4a6cae7 // indirect
	github.com/sasha-s/go-deadlock v0.3.5 // indirect
)
