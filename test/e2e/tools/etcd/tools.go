//go:build tools

// Package tools pins the etcd server command the e2e suite builds.
package tools

import _ "go.etcd.io/etcd/server/v3"
