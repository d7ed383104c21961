#!/bin/bash
# install.sh - make sure the Debian packages that the peers' benchmarks need are
# installed: bash bench/peers/install.sh [openmpi] [mpich] [gloo] [plot]
# (default: openmpi mpich gloo).
#
#   openmpi   mpicc.openmpi, mpirun.openmpi      openmpi-bin libopenmpi-dev
#   mpich     mpicc.mpich, mpirun.mpich          mpich libmpich-dev
#   gloo      torch.distributed in /usr/bin/python3   python3-torch
#   plot      matplotlib in /usr/bin/python3     python3-matplotlib
#
# When something is missing: as root, `apt-get update` once and then `apt-get
# install` of what is missing; as anyone else, the exact apt-get line to run
# is printed and the status is 2. Status 0 when everything is there.
set -u
want=("$@")
[ ${#want[@]} -gt 0 ] || want=(openmpi mpich gloo)

missing=()
for w in "${want[@]}"; do
    case $w in
    # the compiler wrapper comes with the -bin package, mpi.h with the -dev one
    openmpi) command -v mpirun.openmpi >/dev/null && echo '#include <mpi.h>' | mpicc.openmpi -x c -E - >/dev/null 2>&1 ||
                 missing+=(openmpi-bin libopenmpi-dev) ;;
    mpich)   command -v mpirun.mpich >/dev/null && echo '#include <mpi.h>' | mpicc.mpich -x c -E - >/dev/null 2>&1 ||
                 missing+=(mpich libmpich-dev) ;;
    gloo)    /usr/bin/python3 -c 'import torch.distributed' >/dev/null 2>&1 || missing+=(python3-torch) ;;
    plot)    /usr/bin/python3 -c 'import matplotlib' >/dev/null 2>&1 || missing+=(python3-matplotlib) ;;
    *) echo "install.sh: '$w' is not one of openmpi, mpich, gloo, plot" >&2; exit 2 ;;
    esac
done
[ ${#missing[@]} -eq 0 ] && exit 0

line="apt-get install -y ${missing[*]}"
if ! command -v apt-get >/dev/null; then
    echo "install.sh: missing ${missing[*]} (Debian's package names); this system has no apt-get:" \
         "install their equivalents, then run again" >&2
    exit 2
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "install.sh: missing Debian packages: ${missing[*]}. Install them with:" >&2
    echo "    sudo apt-get update && sudo $line" >&2
    exit 2
fi
echo "install.sh: installing ${missing[*]} (apt-get update, then $line)" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q </dev/null >&2 || { echo "install.sh: apt-get update failed" >&2; exit 1; }
apt-get install -y -q "${missing[@]}" </dev/null >&2 || { echo "install.sh: $line failed" >&2; exit 1; }
