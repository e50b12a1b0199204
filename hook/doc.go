// Package hook holds the plain values the domain packages hand to their
// lifecycle hooks: a pod (Pod, PodResources) and a container (Container,
// ContainerState, User, SeccompProfile) as a hook sees them, and the error
// by which a hook refuses a request on policy (ErrPermissionDenied).
//
// sandbox and container define their hook interfaces (sandbox.Hooks,
// container.Hooks) in these types and convert their own records into
// them; hook implementations (the NRI adapter, package nri) read them
// without importing the domain. daemon wires the two together.
//
// It must never import a package of the project: it is the floor both
// sides stand on. It imports only the standard library.
package hook
