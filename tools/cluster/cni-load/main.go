// cni-load: the network a container runtime loads from a CNI config directory, as containerd 2's CRI
// plugin loads it (internal/cri/server/service_linux.go: go-cni's New with two networks at least and
// one config, then WithLoNetwork and WithDefaultConf, over libcni). The tests hold the agent's idea
// of "the config the runtime loads, and whether it runs the plugin" to this, the runtime's own code
// (test/cni/as-containerd-loads.test.ts).
//
//	cni-load DIR...
//
// One JSON line per directory: the first config file in libcni's order, and either the error that
// failed the load or the network's name and its plugins' types in the order the runtime runs them.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	gocni "github.com/containerd/go-cni"
	"github.com/containernetworking/cni/libcni"
)

type loaded struct {
	Dir     string   `json:"dir"`
	First   string   `json:"first,omitempty"`
	Error   string   `json:"error,omitempty"`
	Name    string   `json:"name,omitempty"`
	Plugins []string `json:"plugins"`
}

// As containerd's CRI: the loopback network and the default one, at most one config file.
func load(dir string) loaded {
	out := loaded{Dir: dir, Plugins: []string{}}
	if files, err := libcni.ConfFiles(dir, []string{".conf", ".conflist", ".json"}); err == nil && len(files) > 0 {
		sort.Strings(files)
		out.First = filepath.Base(files[0])
	}
	cni, err := gocni.New(gocni.WithMinNetworkCount(2), gocni.WithPluginConfDir(dir), gocni.WithPluginMaxConfNum(1))
	if err == nil {
		err = cni.Load(gocni.WithLoNetwork, gocni.WithDefaultConf)
	}
	if err != nil {
		out.Error = err.Error()
		return out
	}
	networks := cni.GetConfig().Networks
	network := networks[len(networks)-1].Config
	out.Name = network.Name
	for _, plugin := range network.Plugins {
		out.Plugins = append(out.Plugins, plugin.Network.Type)
	}
	return out
}

func main() {
	encoder := json.NewEncoder(os.Stdout)
	for _, dir := range os.Args[1:] {
		if err := encoder.Encode(load(dir)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
