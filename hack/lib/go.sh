# shellcheck shell=bash
# The Go toolchain every script under hack/ builds and tests with. A machine
# starts on its own Go and, with GOTOOLCHAIN=local (Debian's and the official
# tarball's default here), ignores go.mod's toolchain line: so every path that
# runs go sources this file (hack/cluster/lib.sh does, for the scripts that
# source it), as the Makefile and .ci/run export the same value. The go command
# fetches that toolchain from the module proxy once per machine (76 MB).
# test/toolchain checks that this value, the Makefile's, .ci/run's, the
# README's and go.mod's toolchain line agree.
export GOTOOLCHAIN=go1.27.3
