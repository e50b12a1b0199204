# shellcheck shell=bash
# The CI subset (`make conformance-ci`): the [NodeConformance] specs and the Services/DNS
# [Conformance] specs, without [Slow], [Serial] and [Disruptive]. Sourced by run.sh and
# ci-specs.sh.
CI_FOCUS='\[NodeConformance\]|\[sig-network\] (Services|DNS) .*\[Conformance\]'
CI_SKIP='\[Slow\]|\[Serial\]|\[Disruptive\]'
