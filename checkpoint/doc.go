// Package checkpoint is checkpoint and restore of containers (KEP-2008) and
// pods, with CRIU through runc's libcontainer:
//
//   - Checkpointer writes a container's checkpoint archive (checkpoint.go;
//     its writable layer: checkpoint_rootfs.go) and, for CheckpointPod, one
//     per container of a pod, all frozen first (podcheckpoint.go); at start
//     it thaws what an interrupted CheckpointPod left frozen.
//   - Restorer is the container manager's container.Restorer: the steps of
//     a CreateContainer from an archive or a checkpoint image (restore.go),
//     the guards against hostile archives (restore_guard.go: the archive;
//     restore_creds.go, restore_seccomp.go, restore_lsm.go,
//     restore_mounts.go, restore_mountrules.go, restore_files.go,
//     restore_fileperms.go, restore_rootfs.go: what CRIU would restore
//     beyond the spec, read from the CRIU images by restore_images.go), the
//     reservation of the dumped pids in the pod's PID namespace
//     (restore_pids.go), and the StartContainer that restores the processes.
//   - podarchive is the layout of a pod checkpoint directory (pod.json).
//
// It uses containers only through container's Hold, Checkpointable, Dirs,
// Restoring and Restoration (container/checkpointable.go,
// container/restoring.go), never their internals; the daemon wires the
// two. Its errors are container's.
//
// Imports: the standard library, x/sys/unix, runc's libcontainer, go-criu
// (with protobuf, for the CRIU images), moby's go-archive and sys packages,
// the OCI runtime-spec, minicri's container, image, monitor and ocirt
// packages and its internal/ helpers. It must never import gRPC or the CRI
// API (k8s.io/cri-api), server or daemon; container must never import it.
package checkpoint
