// Package lazy serves an eStargz layer as a read-only FUSE filesystem whose
// files arrive on demand: the layer's table of contents (TOC) is read from the
// end of the blob and checked against the digest the image manifest names
// (the layer annotation containerd.io/snapshot/stargz/toc.digest); a file's
// bytes are fetched by range reads of the blob, chunk by chunk, each chunk
// checked against its TOC digest before a byte of it is returned (a bad chunk
// is EIO), and kept in a cache directory of the layer; a background fetch
// completes the layer, the prioritized files (before the .prefetch.landmark)
// first. The tree is what overlayfs expects of a lower layer: whiteouts are
// char 0/0 devices, opaque directories carry trusted.overlay.opaque.
//
// The filesystems live in one process per node, minicri-lazyfs (Serve), which
// the daemon starts detached (StartServer) and talks to over a unix socket
// (Client): it outlives the daemon, so a daemon killed -9 leaves containers
// reading.
//
// A domain package: it knows nothing of gRPC, the CRI or the rest of the
// project (it imports of it only internal/atomicfile); image/ will hand it
// BlobReaders built on a pull's transport.
package lazy
