# minicri — GNU make. All targets work as root on a fresh Debian 12 machine;
# everything that needs tools depends on `deps` (fast when already done).
#
#   make run          build, install what is missing, run minicri in the foreground
#   make check        the inner loop (<= 5 min warm): vet + lint + unit + a short integration subset
#   make test         vet + lint + unit + fuzz + integration + critest + e2e + e2e-evented +
#                     conformance-ci + vmtest-ci,
#                     stops at the first failure
#   make lint         golangci-lint (.golangci.yml): govet staticcheck errcheck gosec ineffassign unused
#   make fuzz         every Go fuzz target for FUZZTIME each (hack/fuzz.sh)
#   make soak         a busy node's week in an hour (test/soak, issue 23): SOAK_PODS pods churned
#                     for SOAK_MINUTES under seeded faults (SOAK_SEED replays), leaks/lost lines/
#                     exit codes/deadlines/convergence checked; soak-ci: 5 minutes, fewer pods
#   make soak-containerd  the same soak against containerd 2.4 (built by hack/bench-tools.sh):
#                     the faults that apply, its leaks and stuck pods counted
#   make critest      critest v1.37.0 against a private minicri instance
#   make e2e          stock kubelet + control plane (Kubernetes v1.38.0-beta.0) drive minicri;
#                     K8S_VERSION=v1.37.2 make e2e: the same with v1.37.2 (version skew)
#   make conformance  the Kubernetes conformance suite, offline (test/conformance/README.md)
#   make bench        minicri vs containerd 1.6 (Debian) and 2.4 (built): pod lifecycles, memory,
#                     110 pods + exec probes (BENCH_SCALE=0 skips), 1 GiB pull (~20 min),
#                     checkpoint/restore (BENCH_CKPT=0 skips)
#   make bench-scale  110 pods through the kubelet (test/cluster, 1 node) + exec probes, vs containerd (~20 min)
#   make bench-ckpt   checkpoint/restore of a counter and a 500 MiB process, pod migration
#   make bench-lazy   lazy pulls: PullImage to first log line and to done, eStargz 1 GiB and 50 MB,
#                     minicri lazy / full, containerd 2.4 / + stargz-snapshotter (hack/bench-lazy.sh)
#                     between two private instances (~45 s)
#   make vmtest-ci    a cgroup v2 + systemd + AppArmor guest (QEMU, Debian 12's kernel):
#                     node shape, integration + critest subsets, minicri's systemd unit
#                     restarted under pods, kubelet with cgroupDriver: systemd (test/vm/README.md)
#   make vmtest       the same with every integration test and every critest spec (~1 h)
#   make vm-start / vm-stop / vm-status   keep the guest up for test/vm/run.sh CMD...
#   make install      bin/* to $(BINDIR), the systemd unit, /etc/minicri/config.toml, /etc/crictl.yaml
#   make uninstall    removes them (pods, /var/lib/minicri and changed config files stay)

SHELL       := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := build

# Go lives in /usr/local/go on the project machines; appended so a Go already on PATH wins.
# The machines' Go (1.26.8) ignores go.mod's toolchain line (GOTOOLCHAIN=local in its
# go.env): every recipe runs the toolchain go.mod names, fetched once from the module proxy
# (hack/goenv.sh does the same for scripts run on their own). A GOTOOLCHAIN set by the caller wins.
export PATH := $(PATH):/usr/local/go/bin
export GOTOOLCHAIN ?= $(shell sed -n 's/^toolchain //p' go.mod)

GO      ?= go
GOTAGS  ?= seccomp
MODULE  := github.com/minicri/minicri
OUT     := _output
# RACE=1 adds -race to `make unit`.
RACE    ?=
UNIT_FLAGS        ?=
INTEGRATION_FLAGS ?= -timeout 30m
# Extra flags for bin/minicri in `make run`, e.g. ARGS="--log-level debug".
ARGS    ?=
# `make fuzz`: time per fuzz target, workers per target; `make test` fuzzes each
# target for TEST_FUZZTIME.
FUZZTIME      ?= 60s
FUZZ_PARALLEL ?= 2
TEST_FUZZTIME ?= 10s
# Flags for the bench client, e.g. BENCH_ARGS="-n 50 -hostport".
BENCH_ARGS ?= -n 20

# LAZY=1: critest, e2e, e2e-evented, conformance(-ci) and the cluster targets run minicri
# with lazy pulls on and the test registry serving every image in eStargz form
# (test/registry -estargz); they fail unless minicri's log shows layers mounted lazily and
# none of them pulled whole (hack/instance.sh INSTANCE_LAZY). Their outputs get "-lazy".
LAZY ?=
export INSTANCE_LAZY := $(filter 1,$(LAZY))
LAZY_OUT := $(if $(INSTANCE_LAZY),-lazy)

CNI_VERSION       := v1.10.0
CRI_TOOLS_VERSION := v1.37.0
export CNI_VERSION CRI_TOOLS_VERSION

.PHONY: all check integration-short deps build run vet lint unit fuzz integration critest conformance test bench bench-ckpt bench-scale clean FORCE
.PHONY: conformance-ci-specs cluster cluster-down cluster-netcheck cluster-scale cluster-test conformance-ci
.PHONY: critest-lazy bench-lazy bench-ab e2e e2e-evented vmtest vmtest-ci vm-start vm-stop vm-status install uninstall soak soak-ci soak-containerd

all: build

deps:
	@hack/deps.sh

# ---- build -----------------------------------------------------------------

build: bin/minicri bin/minicri-pause bin/minicri-monitor bin/minicri-monitor-helper bin/minicri-lazyfs

bin/minicri: FORCE | deps
	CGO_ENABLED=1 $(GO) build -tags '$(GOTAGS)' -o $@ ./cmd/minicri

bin/minicri-pause: cmd/minicri-pause/pause.c | deps
	@mkdir -p bin
	gcc -static -Os -s -o $@ $<

bin/minicri-monitor-helper: FORCE | deps
	CGO_ENABLED=1 $(GO) build -tags '$(GOTAGS)' -o $@ ./cmd/minicri-monitor-helper

# The per-node server of lazily pulled layers (FUSE; package lazy). Not used by the daemon yet.
bin/minicri-lazyfs: FORCE | deps
	CGO_ENABLED=0 $(GO) build -o $@ ./cmd/minicri-lazyfs

# The long-lived per-pod monitor (C); its short-lived Go helper is bin/minicri-monitor-helper.
MONITOR_SRC := $(wildcard cmd/minicri-monitor/*.c cmd/minicri-monitor/*.h)
bin/minicri-monitor: $(MONITOR_SRC) | deps
	@mkdir -p bin
	gcc -static-pie -fPIE -O2 -s -Wall -Wextra -Werror -Wformat -Wformat-security -D_FORTIFY_SOURCE=2 \
		-fstack-protector-strong -fstack-clash-protection -Wl,-z,relro,-z,now -o $@ $(filter %.c,$^)

run: build
	@hack/deps.sh check run
	@[ "$$(id -u)" = 0 ] || { echo "make run: minicri needs root" >&2; exit 1; }
	exec ./bin/minicri $(ARGS)

# ---- tests -----------------------------------------------------------------

vet: | deps
	@hack/deps.sh check vet
	$(GO) vet -tags '$(GOTAGS)' ./...

# golangci-lint (pinned in hack/deps.sh, built from the Go module proxy), then the C
# monitor's layout: no file over 500 lines, no circle of calls between files.
lint: | deps
	@hack/deps.sh check lint
	$(OUT)/tools/golangci-lint run ./...
	hack/ccalls.sh --self-test cmd/minicri-monitor

# Every package except ./test/integration (the integration phase runs it):
# the test tools' own tests (cribench, the registry fixture, compare) too.
unit: | deps
	@hack/deps.sh check unit
	@pkgs=$$($(GO) list -tags '$(GOTAGS)' ./...); \
	pkgs=$$(echo "$$pkgs" | grep -v '^$(MODULE)/test/integration$$' || true); \
	if [ -z "$$pkgs" ]; then echo "unit: no packages to test"; exit 0; fi; \
	echo "$(GO) test -tags '$(GOTAGS)' $(if $(RACE),-race) $(UNIT_FLAGS) <$$(echo $$pkgs | wc -w) packages>"; \
	CGO_ENABLED=1 $(GO) test -tags '$(GOTAGS)' $(if $(RACE),-race) $(UNIT_FLAGS) $$pkgs

# Every fuzz target (found with `go test -list '^Fuzz'`) for FUZZTIME each;
# FUZZ=regexp picks targets. `make unit` runs their seed corpora.
fuzz: | deps
	@hack/deps.sh check fuzz
	FUZZTIME=$(FUZZTIME) FUZZ_PARALLEL=$(FUZZ_PARALLEL) GO=$(GO) GOTAGS='$(GOTAGS)' hack/fuzz.sh

# Integration tests get the freshly built binaries in MINICRI_BIN / MINICRI_PAUSE.
integration: build
	@hack/deps.sh check integration
	@if [ ! -d test/integration ]; then echo "integration: no test/integration, skipping"; exit 0; fi; \
	set -x; \
	MINICRI_BIN=$(CURDIR)/bin/minicri MINICRI_PAUSE=$(CURDIR)/bin/minicri-pause \
	CGO_ENABLED=1 $(GO) test -count=1 -tags '$(GOTAGS)' $(INTEGRATION_FLAGS) $(if $(INTEGRATION_RUN),-run '$(INTEGRATION_RUN)') ./test/integration/...

# The soak (test/soak): a private instance churned under seeded faults; the seed is printed
# (SOAK_SEED=N replays its fault schedule). Both run on a CNI conflist (SOAK_NETWORK=cni: its
# CNI faults too, so every fault kind is drawn; SOAK_NETWORK=builtin for the built-in network).
# soak-ci, a phase of make test: 5 minutes at a scale that fits 2 cores. Other knobs: SOAK_PROBE,
# SOAK_LIFE, SOAK_FAULT_EVERY, SOAK_KEEP=1.
SOAK_MINUTES ?= 30
SOAK_PODS    ?= 110
SOAK_SEED    ?=
SOAK_NETWORK ?= cni
soak-ci: SOAK_MINUTES = 5
soak-ci: SOAK_PODS = 24
soak-ci: SOAK_NETWORK = cni
define soak_run
	CGO_ENABLED=1 $(GO) build -o $(OUT)/bin/soak ./test/soak
	MINICRI_BIN=$(CURDIR)/bin/minicri SOAK_MINUTES=$(SOAK_MINUTES) SOAK_PODS=$(SOAK_PODS) SOAK_SEED=$(SOAK_SEED) \
		SOAK_NETWORK=$(SOAK_NETWORK) $(OUT)/bin/soak
endef
soak: build
	@hack/deps.sh install soak
	$(soak_run)

soak-ci: build
	@hack/deps.sh check soak-ci
	$(soak_run)

# The same soak against containerd 2.4 (issue 23 item 3): hack/bench-tools.sh builds it, its shim
# and runc (cached), first on the soak's PATH; SOAK_RUNTIME=containerd runs it privately as
# hack/containerd.sh does, on the soak's CNI wrapper (its faults apply), registry and cgroup parent.
# The table names what does not apply; its leaks and stuck pods are counted (fails on any finding).
soak-containerd: | deps
	hack/bench-tools.sh $(CURDIR)/$(OUT)/bench/bin2 >/dev/null
	@hack/deps.sh install soak-containerd
	CGO_ENABLED=1 $(GO) build -o $(OUT)/bin/soak ./test/soak
	PATH=$(CURDIR)/$(OUT)/bench/bin2:$$PATH SOAK_RUNTIME=containerd SOAK_MINUTES=$(SOAK_MINUTES) SOAK_PODS=$(SOAK_PODS) \
		SOAK_SEED=$(SOAK_SEED) SOAK_NETWORK=cni $(OUT)/bin/soak

# CRITEST_RERUNS=0: the first run only (every spec, SPDY streaming, the default handler).
CRITEST_RERUNS ?= 1
critest: build
	@hack/deps.sh check critest
	CRITEST_OUT=$(CURDIR)/$(OUT)/critest$(LAZY_OUT) test/critest/run.sh
ifneq ($(CRITEST_RERUNS),0)
	@echo "critest: the Streaming specs again over WebSocket (v5 remotecommand, tunneled port-forward)"
	CRITEST_FOCUS='Streaming' CRITEST_SKIP= CRITEST_OUT=$(CURDIR)/$(OUT)/critest-websocket$(LAZY_OUT) \
	CRITEST_ARGS='-websocket-exec -websocket-attach -websocket-portforward' test/critest/run.sh
	@echo "critest: every pod on the runc RuntimeClass handler (Debian's runc binary; the image specs do not depend on it)"
	CRITEST_RUNTIME_HANDLER=runc CRITEST_FOCUS= CRITEST_SKIP='Image Manager' CRITEST_OUT=$(CURDIR)/$(OUT)/critest-runc$(LAZY_OUT) \
	test/critest/run.sh
endif

# critest's first run (every spec) with lazy pulls on (LAZY=1), a phase of make test. Its
# two reruns are left to critest: the rootfs of a lazily pulled image is mounted by minicri
# alike for either handler, and streaming does not touch the image (CI's hour; `make critest
# LAZY=1` runs all three).
critest-lazy:
	@$(MAKE) --no-print-directory critest LAZY=1 CRITEST_RERUNS=0

# A stock kubelet (standalone, then with a control plane) drives a private minicri
# instance; Kubernetes and etcd are built once and cached (test/e2e/tools.sh). Kubernetes
# v1.38.0-beta.0 by default (test/e2e/tools/k8s/go.mod); K8S_VERSION=v1.37.2 (from the
# environment) builds and runs v1.37.2 (test/e2e/tools/k8s-v1.37.2).
e2e: build
	@hack/deps.sh check e2e
	E2E_OUT=$(CURDIR)/$(OUT)/e2e$(LAZY_OUT) test/e2e/run.sh

# The kubelet's standalone mode again with EventedPLEG on (minicri's event stream and
# PodSandboxStatus containers_statuses/timestamp; checks no fallback, no ContainerStatus).
e2e-evented: build
	@hack/deps.sh check e2e-evented
	E2E_MODES=standalone E2E_FEATURE_GATES=EventedPLEG=true E2E_OUT=$(CURDIR)/$(OUT)/e2e-evented$(LAZY_OUT) test/e2e/run.sh

# The Kubernetes conformance suite (e2e.test v1.38.0-beta.0, [Conformance] + [NodeConformance]),
# offline, on test/cluster (else test/e2e's one-node cluster): test/conformance/README.md.
conformance: build
	@hack/deps.sh install conformance
	$(if $(LAZY_OUT),CONFORMANCE_OUT=$(CURDIR)/$(OUT)/conformance-lazy) test/conformance/run.sh

# Its CI subset: [NodeConformance] + Services/DNS [Conformance], no [Slow]/[Serial].
conformance-ci: build
	@hack/deps.sh check conformance-ci
	CONFORMANCE_SUBSET=ci CONFORMANCE_OUT=$(CURDIR)/$(OUT)/conformance-ci$(LAZY_OUT) test/conformance/run.sh

# test/conformance/ci-specs from the full suite's dry run (after a Kubernetes bump: the
# CI subset's own suite binary must hold exactly these specs).
conformance-ci-specs: | deps
	test/conformance/ci-specs.sh

# A multi-node cluster on this machine (test/cluster: nodes in network namespaces, each with
# its own minicri, kubelet and kube-proxy; CoreDNS; left running until cluster-down).
cluster: build
	@hack/deps.sh install cluster
	test/cluster/up.sh

cluster-down:
	test/cluster/down.sh

# Pod networking across nodes on the running cluster (make cluster first), then leak checks.
cluster-netcheck:
	test/cluster/netcheck.sh

# kubectl apply of a 20-replica Deployment to all Running on the running cluster, median of 3.
cluster-scale:
	test/cluster/scale.sh

# All three: up, netcheck, down (down also after a failed netcheck; a failed up cleans up).
cluster-test: build
	@hack/deps.sh install cluster
	test/cluster/up.sh && { test/cluster/netcheck.sh; rc=$$?; test/cluster/down.sh || rc=1; exit $$rc; }

# The inner loop while working (at most 5 minutes warm): vet, lint, unit and a named short
# integration subset (CHECK_INTEGRATION). `make test` before you push.
CHECK_INTEGRATION ?= ^(TestContainerLifecycleLogsAndLeaks|TestPodGetsIPAndOwnNamespaces|TestBadInputGetsClearErrors|TestStopAndRemoveAreIdempotentAndConcurrent|TestRestartKeepsPodsUntouched|TestExecStreams|TestFailingCNIPluginLeavesNothing)$$
check: deps
	@MAKE=$(MAKE) TEST_PREBUILD=0 hack/test.sh vet lint unit integration-short

# The integration tests of make check (INTEGRATION_RUN reaches the integration recipe as a
# target-specific variable).
integration-short: INTEGRATION_RUN = $(CHECK_INTEGRATION)
integration-short: INTEGRATION_FLAGS = -timeout 10m
integration-short: integration

# One phase after the other, each timed; the first failure stops the run (hack/test.sh).
test: deps
	@MAKE=$(MAKE) TEST_FUZZTIME=$(TEST_FUZZTIME) hack/test.sh

# ---- VM lab (test/vm) ------------------------------------------------------

# VMTEST_RUN=<regexp> picks the integration tests, VMTEST_STEPS the steps.
vmtest: build
	@hack/deps.sh install vmtest
	VMTEST_FULL=1 test/vm/vmtest.sh

vmtest-ci: build
	@hack/deps.sh check vmtest-ci
	test/vm/vmtest.sh

vm-start:
	test/vm/vm.sh start

vm-stop:
	test/vm/vm.sh stop

vm-status:
	test/vm/vm.sh status

# ---- bench -----------------------------------------------------------------

bench: build
	@hack/deps.sh install bench
	$(GO) build -o $(OUT)/bin/cribench ./test/bench/cribench
	hack/bench.sh $(OUT)/bin/cribench $(BENCH_ARGS)

# 110 pods (SCALE_REPLICAS) through the kubelet on a one-node test/cluster, minicri vs
# containerd 1.6 and 2.4: start time, CPU, PSS, exec readiness probes (~20 min; hack/bench-scale.sh).
bench-scale: build
	@hack/deps.sh install bench-scale
	$(GO) build -o $(OUT)/bin/cribench ./test/bench/cribench
	hack/bench-scale.sh $(OUT)/bin/cribench

# minicri at BENCH_AB_REV against the build of now, the pods section of make bench,
# BENCH_AB_ROUNDS rounds alternating (hack/bench-ab.sh): "within noise" for refactors.
BENCH_AB_REV    ?= HEAD~1
BENCH_AB_ROUNDS ?= 3
bench-ab: build
	@hack/deps.sh install bench-ab
	hack/bench-ab.sh $(BENCH_AB_REV) $(BENCH_AB_ROUNDS)

# Lazy pulls (issue 21): cold starts of eStargz images from a throttled registry, minicri
# lazy and whole, containerd 2.4 with overlayfs and with stargz-snapshotter (hack/bench-lazy.sh;
# BENCH_LAZY_IMAGES, BENCH_LAZY_ROUNDS, BENCH_LAZY_RATE, BENCH_LAZY_LATENCY, ...).
bench-lazy: build
	BENCH_TOOLS_STARGZ=1 hack/bench-tools.sh $(CURDIR)/$(OUT)/bench/bin2 >/dev/null
	@hack/deps.sh install bench-lazy
	$(GO) build -o $(OUT)/bin/cribench ./test/bench/cribench
	hack/bench-lazy.sh $(OUT)/bin/cribench

# Checkpoint/restore and pod migration (two instances) times of minicri alone; `make bench`
# runs the same with the migration within one instance.
bench-ckpt: build
	@hack/deps.sh install bench-ckpt
	hack/bench-ckpt.sh

# ---- install ---------------------------------------------------------------

# minicri as a node's service. `make build` first (install builds nothing, so that
# it also works where the checkout is read-only, as in the VM lab). Binaries are
# replaced by rename: running monitors keep executing the old file. An existing
# config.toml or crictl.yaml is kept. DESTDIR stages for a package (no systemctl).
PREFIX      ?= /usr/local
BINDIR      ?= $(PREFIX)/bin
SYSTEMD_DIR ?= /etc/systemd/system
DESTDIR     ?=
UNIT        := $(DESTDIR)$(SYSTEMD_DIR)/minicri.service
CONFIG      := $(DESTDIR)/etc/minicri/config.toml
CRICTL_YAML := $(DESTDIR)/etc/crictl.yaml
SYSTEMCTL    = if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then systemctl $(1); fi

install:
	@for f in bin/minicri bin/minicri-pause bin/minicri-monitor bin/minicri-monitor-helper bin/minicri-lazyfs; do \
		[ -x $$f ] || { echo "make install: $$f missing: run make build first" >&2; exit 1; }; done
	install -d -m 0755 $(DESTDIR)$(BINDIR) $(DESTDIR)$(SYSTEMD_DIR) $(DESTDIR)/etc/minicri
	for f in minicri minicri-pause minicri-monitor minicri-monitor-helper minicri-lazyfs; do \
		install -m 0755 bin/$$f $(DESTDIR)$(BINDIR)/.$$f.new && mv -f $(DESTDIR)$(BINDIR)/.$$f.new $(DESTDIR)$(BINDIR)/$$f; done
	sed 's|@BINDIR@|$(BINDIR)|g' contrib/systemd/minicri.service >$(UNIT).new && chmod 0644 $(UNIT).new && mv -f $(UNIT).new $(UNIT)
	@if [ -e $(CONFIG) ]; then echo "keeping $(CONFIG)"; else \
		echo "bin/minicri --config /dev/null config >$(CONFIG)"; \
		bin/minicri --config /dev/null config >$(CONFIG).new && chmod 0644 $(CONFIG).new && mv $(CONFIG).new $(CONFIG); fi
	@if [ -e $(CRICTL_YAML) ]; then echo "keeping $(CRICTL_YAML)"; else \
		echo "install contrib/crictl.yaml $(CRICTL_YAML)"; install -m 0644 contrib/crictl.yaml $(CRICTL_YAML); fi
	@$(call SYSTEMCTL,daemon-reload)
	@echo "installed; start it with: systemctl enable --now minicri"

# Stopping the service leaves pods running (KillMode=process): remove them first
# (crictl rmp -fa) to clean the node. /var/lib/minicri is left.
uninstall:
	-@$(call SYSTEMCTL,disable --now minicri.service)
	@if [ -e $(CONFIG) ] && [ -x $(DESTDIR)$(BINDIR)/minicri ] && \
		$(DESTDIR)$(BINDIR)/minicri --config /dev/null config | cmp -s - $(CONFIG); then \
		echo "rm $(CONFIG)"; rm -f $(CONFIG); \
	elif [ -e $(CONFIG) ]; then echo "keeping $(CONFIG) (changed)"; fi
	@if [ -e $(CRICTL_YAML) ] && cmp -s contrib/crictl.yaml $(CRICTL_YAML); then \
		echo "rm $(CRICTL_YAML)"; rm -f $(CRICTL_YAML); \
	elif [ -e $(CRICTL_YAML) ]; then echo "keeping $(CRICTL_YAML) (not minicri's)"; fi
	-rmdir $(DESTDIR)/etc/minicri 2>/dev/null
	rm -f $(UNIT) $(DESTDIR)$(BINDIR)/minicri $(DESTDIR)$(BINDIR)/minicri-pause $(DESTDIR)$(BINDIR)/minicri-monitor $(DESTDIR)$(BINDIR)/minicri-monitor-helper $(DESTDIR)$(BINDIR)/minicri-lazyfs
	@$(call SYSTEMCTL,daemon-reload)

# ---- clean -----------------------------------------------------------------

# Keeps /opt/cni/bin and the tool cache (/var/cache/minicri-tools): `make deps`
# restores _output/tools from the cache without rebuilding.
clean:
	rm -rf bin $(OUT)

FORCE:
