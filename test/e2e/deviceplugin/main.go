// Command deviceplugin is the e2e suite's device plugin: it writes a CDI
// spec for one device, registers the extended resource with the kubelet
// (k8s.io/kubelet's device plugin API, v1beta1), lists that one device and
// answers Allocate with its CDI device name only: the container runtime
// (minicri) must resolve the name from the spec and inject the device node
// and the environment.
//
//	deviceplugin -plugin-dir DIR -cdi-dir DIR -host-node PATH
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	dp "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

const (
	resourceName = "minicri.test/cdidev"
	cdiKind      = "minicri.test/e2e"
	deviceID     = "dev0"
	cdiName      = cdiKind + "=" + deviceID
	socketName   = "minicri-e2e-cdi.sock"
)

func main() {
	// The kubelet (1.37) serves kubelet.sock in /var/lib/kubelet/device-plugins
	// whatever its --root-dir; the suite reads the path from its log.
	pluginDir := flag.String("plugin-dir", "", "the directory of the kubelet's kubelet.sock")
	cdiDir := flag.String("cdi-dir", "", "where to write the CDI spec (one of minicri's cdi.spec_dirs)")
	hostNode := flag.String("host-node", "", "the host device node the CDI device injects")
	flag.Parse()
	if *pluginDir == "" || *cdiDir == "" || *hostNode == "" {
		log.Fatal("-plugin-dir, -cdi-dir and -host-node are required")
	}
	if err := writeSpec(*cdiDir, *hostNode); err != nil {
		log.Fatal(err)
	}
	dir := *pluginDir
	sock := filepath.Join(dir, socketName)
	_ = os.Remove(sock)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		log.Fatal(err)
	}
	srv := grpc.NewServer()
	dp.RegisterDevicePluginServer(srv, &plugin{})
	go func() {
		if err := srv.Serve(ln); err != nil {
			log.Print(err)
		}
	}()
	if err := register(filepath.Join(dir, "kubelet.sock")); err != nil {
		log.Fatal(err)
	}
	log.Printf("registered %s (CDI device %s) with the kubelet", resourceName, cdiName)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	srv.Stop()
	_ = os.Remove(sock)
	_ = os.Remove(filepath.Join(*cdiDir, "minicri-e2e.json"))
}

// writeSpec writes the CDI spec: the device node under another name, and
// an environment variable; written aside and renamed in.
func writeSpec(dir, hostNode string) error {
	spec := map[string]any{
		"cdiVersion": "0.6.0",
		"kind":       cdiKind,
		"devices": []map[string]any{{
			"name": deviceID,
			"containerEdits": map[string]any{
				"env":         []string{"E2E_CDI=injected-by-cdi"},
				"deviceNodes": []map[string]any{{"path": "/dev/e2e-cdi-null", "hostPath": hostNode}},
			},
		}},
	}
	data, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, ".minicri-e2e.json.tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, "minicri-e2e.json"))
}

func register(kubeletSock string) error {
	conn, err := grpc.NewClient("unix://"+kubeletSock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = dp.NewRegistrationClient(conn).Register(ctx, &dp.RegisterRequest{
		Version: dp.Version, Endpoint: socketName, ResourceName: resourceName,
	})
	if err != nil {
		return fmt.Errorf("register with the kubelet: %w", err)
	}
	return nil
}

type plugin struct {
	dp.UnimplementedDevicePluginServer
}

func (*plugin) GetDevicePluginOptions(context.Context, *dp.Empty) (*dp.DevicePluginOptions, error) {
	return &dp.DevicePluginOptions{}, nil
}

// ListAndWatch lists the one device, healthy, and keeps the stream open.
func (*plugin) ListAndWatch(_ *dp.Empty, s grpc.ServerStreamingServer[dp.ListAndWatchResponse]) error {
	if err := s.Send(&dp.ListAndWatchResponse{Devices: []*dp.Device{{ID: deviceID, Health: dp.Healthy}}}); err != nil {
		return err
	}
	<-s.Context().Done()
	return nil
}

// Allocate answers with the CDI device name alone: no device specs, mounts
// or environment of the device plugin API itself.
func (*plugin) Allocate(_ context.Context, req *dp.AllocateRequest) (*dp.AllocateResponse, error) {
	resp := &dp.AllocateResponse{}
	for _, c := range req.ContainerRequests {
		log.Printf("Allocate %v -> %s", c.DevicesIds, cdiName)
		resp.ContainerResponses = append(resp.ContainerResponses, &dp.ContainerAllocateResponse{
			CdiDevices: []*dp.CDIDevice{{Name: cdiName}},
		})
	}
	return resp, nil
}

func (*plugin) GetPreferredAllocation(context.Context, *dp.PreferredAllocationRequest) (*dp.PreferredAllocationResponse, error) {
	return &dp.PreferredAllocationResponse{}, nil
}

func (*plugin) PreStartContainer(context.Context, *dp.PreStartContainerRequest) (*dp.PreStartContainerResponse, error) {
	return &dp.PreStartContainerResponse{}, nil
}
