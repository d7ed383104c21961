#!/bin/bash
# run.sh - run one configuration of the peers' benchmarks on this machine.
#
#   bash bench/peers/run.sh NAME [FLAGS...]     # the bench's output on stdout
#   bash bench/peers/run.sh --cmd NAME [FLAGS]  # print the command, run nothing
#   bash bench/peers/run.sh --list              # the configurations
#
# NAME is LIBRARY_TRANSPORT_npN, N the number of ranks:
#   openmpi_shm_npN   Open MPI, its defaults (shared memory between the ranks);
#                     with more ranks than CPUs, --oversubscribe (which also
#                     makes Open MPI yield while it waits)
#   openmpi_tcp_npN   Open MPI over TCP on loopback: --mca pml ob1 --mca btl
#                     tcp,self --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo
#   mpich_shm_npN     MPICH, its defaults (Debian's 4.0 is ch4:ucx; shared memory
#                     between the ranks), UCX_NET_DEVICES=lo
#   mpich_tcp_npN     MPICH over TCP on loopback: MPIR_CVAR_NOLOCAL=1 (no shared
#                     memory: everything through UCX), UCX_TLS=tcp,self,
#                     UCX_NET_DEVICES=lo
#   gloo_tcp_npN      torch.distributed, backend gloo (TCP), GLOO_SOCKET_IFNAME=lo
# FLAGS go to the bench (bench_mpi.c, bench_gloo.py): cc_bench's flags, e.g.
# -k all_reduce,barrier -b 8 -e 64M -f 4 -s 1M,16M -l 0.2.
#
# The MPI benches are built with Debian's mpicc.openmpi and mpicc.mpich into
# BUILD/peers (BUILD: the environment's, else build/ beside this repository's
# Makefile), by make, when missing or older than their source. Missing
# packages: bash bench/peers/install.sh. Every run has OMP_NUM_THREADS=1.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=${BUILD:-$top/build}
case $build in /*) ;; *) build=$top/$build ;; esac

list() {
    echo "openmpi_shm_np2 openmpi_shm_np4 openmpi_tcp_np2 openmpi_tcp_np4"
    echo "mpich_shm_np2 mpich_shm_np4 mpich_tcp_np2 mpich_tcp_np4"
    echo "gloo_tcp_np2 gloo_tcp_np4     (any npN works)"
}

print_only=
case ${1:-} in
--list) list; exit 0 ;;
--cmd) print_only=1; shift ;;
""|-h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
esac
name=$1
shift

if [[ ! $name =~ ^(openmpi|mpich|gloo)_(shm|tcp)_np([0-9]+)$ ]]; then
    echo "run.sh: '$name' is not a configuration (LIBRARY_TRANSPORT_npN):" >&2
    list >&2
    exit 2
fi
lib=${BASH_REMATCH[1]} tr=${BASH_REMATCH[2]} np=${BASH_REMATCH[3]}
if [ "$lib" = gloo ] && [ "$tr" = shm ]; then
    echo "run.sh: gloo has no shared-memory transport on CPU: use gloo_tcp_np$np" >&2
    exit 2
fi
if [ "$np" -lt 1 ]; then echo "run.sh: np must be at least 1" >&2; exit 2; fi

cmd=(env OMP_NUM_THREADS=1)
case $lib in
openmpi)
    bin=$build/peers/bench_mpi.openmpi
    cmd+=(OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun.openmpi -np "$np")
    [ "$np" -gt "$(nproc)" ] && cmd+=(--oversubscribe)
    [ "$tr" = tcp ] && cmd+=(--mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo
                             --mca oob_tcp_if_include lo)
    cmd+=("$bin")
    ;;
mpich)
    bin=$build/peers/bench_mpi.mpich
    cmd+=(UCX_NET_DEVICES=lo)
    [ "$tr" = tcp ] && cmd+=(MPIR_CVAR_NOLOCAL=1 UCX_TLS=tcp,self)
    cmd+=(mpirun.mpich -np "$np" "$bin")
    ;;
gloo)
    bin=
    cmd+=(GLOO_SOCKET_IFNAME=lo /usr/bin/python3 "$here/bench_gloo.py" --nranks "$np")
    ;;
esac
cmd+=("$@")

if [ -n "$print_only" ]; then
    echo "${cmd[*]}"
    exit 0
fi
if ! bash "$here/install.sh" "$lib"; then
    exit 2
fi
if [ -n "$bin" ]; then
    make -s -C "$top" BUILD="$build" "$bin" >&2 || { echo "run.sh: could not build $bin" >&2; exit 1; }
fi
exec "${cmd[@]}"
