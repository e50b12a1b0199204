package main

// libcontainer re-executes this binary as "<binary> init" for every container
// process; lcinit hands such a process over before main runs.
import _ "github.com/minicri/minicri/internal/lcinit"
