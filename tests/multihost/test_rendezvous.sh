#!/usr/bin/env bash
# tests/multihost/test_rendezvous.sh BUILD - the ways ranks find each other without ccrun:
# file:///PATH (rank 0 writes its address into a file under an fcntl lock; a
# stale file from an earlier job must not stop the next one), tcp://HOST:PORT,
# and a rendezvous port that is already in use (the error names the port).
# Ranks are started by hand with RANK/WORLD_SIZE, as another launcher would.
set -u
build=${1:-build}
probe=$build/probes/net_probe
pass=0 fail=0
ok()  { echo "PASS: rendezvous: $*"; pass=$((pass + 1)); }
bad() { echo "FAIL: rendezvous: $*"; fail=$((fail + 1)); }
dir=$(mktemp -d "${TMPDIR:-/tmp}/cc-rdv.XXXXXX")
trap 'rm -rf "$dir"' EXIT
port() { echo $((20000 + (RANDOM * 7 + $$) % 12000)); }   # below the ephemeral ports (32768-)

# start N ranks of net_probe MODE with extra environment; wait; echo the exit statuses
job() {   # job N MODE VAR=VALUE...
  local n=$1 mode=$2 r pids=() st=()
  shift 2
  for ((r = 0; r < n; r++)); do
    local rr=$r
    [ -n "${LATE0:-}" ] && rr=$((n - 1 - r))   # rank 0 last, 0.5 s after the others
    [ -n "${LATE0:-}" ] && [ "$rr" -eq 0 ] && sleep 0.5
    env "$@" RANK=$rr WORLD_SIZE=$n CC_TIMEOUT=20 timeout 60 "$probe" "$mode" > "$dir/out.$rr" 2>&1 &
    pids+=($!)
    sleep 0.05
  done
  for r in "${pids[@]}"; do wait "$r"; st+=($?); done
  echo "${st[*]}"
}

# file:// - 3 ranks, the others usually before rank 0 writes the file
rm -f "$dir/rdv"
st=$(job 3 all NET_PROBE_INIT="file://$dir/rdv")
if [ "$st" = "0 0 0" ] && grep -q '^PASS' "$dir/out.0"; then ok "file:// with 3 ranks: every check passes"
else bad "file:// with 3 ranks: statuses $st; $(grep -h -m2 'FAIL\|result' "$dir"/out.* | head -3)"; fi
[ -e "$dir/rdv" ] && bad "file://: rank 0 left the rendezvous file behind" || ok "file://: the file is removed once every rank is in"

# file:// over TCP, with a stale file from an earlier job (a port nobody listens on, an old nonce)
printf 'cc-rendezvous 2 127.0.0.1 %s 0123456789abcdef0123456789abcdef\n' "$(port)" > "$dir/rdv"
st=$(job 2 all NET_PROBE_INIT="file://$dir/rdv" CC_TRANSPORT=tcp)
if [ "$st" = "0 0" ]; then ok "file:// over TCP with a stale file from an earlier job in place"
else bad "file:// with a stale file: statuses $st; $(grep -h -m2 'FAIL\|result' "$dir"/out.* | head -3)"; fi

# the same, rank 0 starting last: the others read the stale file first and must try again
printf 'cc-rendezvous 2 127.0.0.1 %s 0123456789abcdef0123456789abcdef\n' "$(port)" > "$dir/rdv"
st=$(LATE0=1 job 3 token NET_PROBE_INIT="file://$dir/rdv" CC_TRANSPORT=tcp)
[ "$st" = "0 0 0" ] && ok "file:// with a stale file, rank 0 starting 0.5 s after the others" \
  || bad "file:// stale file, rank 0 late: statuses $st; $(grep -h -m2 'result' "$dir"/out.* | head -3)"

# file:// with garbage in the file
printf 'not a rendezvous at all\n\0\1\2' > "$dir/rdv"
st=$(job 2 token NET_PROBE_INIT="file://$dir/rdv")
[ "$st" = "0 0" ] && ok "file:// with garbage in the file: init succeeds" || bad "file:// with garbage: statuses $st"

# Slurm: no RANK/MASTER_*; rank and size from SLURM_PROCID/SLURM_NTASKS, the host
# from the first entry of SLURM_JOB_NODELIST, the port from SLURM_JOB_ID
jid=$((RANDOM * 3 + $$ % 1000))
pids=()
for r in 0 1; do
  env -u RANK -u WORLD_SIZE -u MASTER_ADDR -u MASTER_PORT SLURM_PROCID=$r SLURM_NTASKS=2 SLURM_JOB_ID=$jid \
    SLURM_JOB_NODELIST='localhost,node[02-04]' CC_TIMEOUT=20 timeout 60 "$probe" token > "$dir/out.$r" 2>&1 &
  pids+=($!)
done
st=""; for p in "${pids[@]}"; do wait "$p"; st="$st $?"; done
[ "$st" = " 0 0" ] && ok "Slurm variables only (SLURM_JOB_NODELIST=localhost,node[02-04], port from SLURM_JOB_ID $jid)" \
  || bad "Slurm variables: statuses$st; $(cat "$dir"/out.* | head -3)"

# CC_SOCKET_IFNAME: the ranks listen on that interface's address; an unknown one is an error naming it
st=$(job 2 token MASTER_ADDR=127.0.0.1 MASTER_PORT="$(port)" CC_TRANSPORT=tcp CC_SOCKET_IFNAME=lo)
[ "$st" = "0 0" ] && ok "CC_SOCKET_IFNAME=lo with CC_TRANSPORT=tcp" || bad "CC_SOCKET_IFNAME=lo: statuses $st; $(cat "$dir"/out.* | head -3)"
st=$(job 2 token MASTER_ADDR=127.0.0.1 MASTER_PORT="$(port)" CC_TIMEOUT=3 CC_SOCKET_IFNAME=nosuchif0)
if [ "$st" != "0 0" ] && grep -q 'nosuchif0' "$dir/out.0" "$dir/out.1"; then ok "CC_SOCKET_IFNAME=nosuchif0 refused: $(grep -h -m1 -o 'CC_SOCKET_IFNAME=nosuchif0[^;]*' "$dir"/out.* | head -1)"
else bad "CC_SOCKET_IFNAME=nosuchif0: statuses $st; $(cat "$dir"/out.* | head -3)"; fi

# tcp://HOST:PORT
p=$(port)
st=$(job 2 token NET_PROBE_INIT="tcp://127.0.0.1:$p")
[ "$st" = "0 0" ] && ok "tcp://127.0.0.1:$p" || bad "tcp://127.0.0.1:$p: statuses $st; $(cat "$dir"/out.* | head -3)"

# a rendezvous port in use: a first job's rank 0 holds it, a second rank 0 must say so
p=$(port)
env RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$p CC_TIMEOUT=5 timeout 20 "$probe" token > "$dir/hold" 2>&1 &
holder=$!
sleep 0.3
env RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$p CC_TIMEOUT=5 timeout 20 "$probe" token > "$dir/second" 2>&1
if grep -q "port $p" "$dir/second" && grep -qi 'in use' "$dir/second"; then ok "port in use: $(grep -m1 -o "cannot listen.*" "$dir/second" | cut -c1-150)"
else bad "port in use: the second rank 0 said: $(head -c 300 "$dir/second")"; fi
env RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$p CC_TIMEOUT=5 timeout 20 "$probe" token > /dev/null 2>&1
wait "$holder"

# A rank that is refused at the rendezvous fails the whole job within seconds,
# on every rank, each saying which rank was refused and why (CC_TIMEOUT=120:
# waiting out the timeout fails the test). Four jobs of 3 ranks at once:
#   token     rank 1 has another CC_TOKEN
#   notoken   rank 1 has no CC_TOKEN, the others one
#   notoken0  rank 0 has no CC_TOKEN, the others one
#   world     rank 2 says WORLD_SIZE=4, the others 3
# refused_job NAME: start it; refused_check NAME WANT0 WANT1 WANT2 (regexes
# each rank's `result:` line must match)
tok_a=$("$build/ccrun" --make-token) tok_b=$("$build/ccrun" --make-token)
refused_job() {
  local name=$1 r p vars
  p=$(port)
  for r in 0 1 2; do
    vars=(RANK=$r WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 MASTER_PORT=$p CC_TIMEOUT=120 CC_TOKEN=$tok_a)
    case $name$r in
      token1) vars+=(CC_TOKEN=$tok_b) ;;
      notoken1 | notoken00) vars=(-u CC_TOKEN "${vars[@]:0:5}") ;;
      world2) vars+=(WORLD_SIZE=4) ;;
    esac
    ( t0=$(date +%s%N); env -u CC_TOKEN "${vars[@]}" timeout 20 "$probe" token > "$dir/$name.$r" 2>&1
      echo "exit $? after $((($(date +%s%N) - t0) / 1000000)) ms" >> "$dir/$name.$r" ) &
  done
}
refused_check() {
  local name=$1 r ok=1 res ms st summary=""
  shift
  for r in 0 1 2; do
    res=$(grep -m1 '^result: ' "$dir/$name.$r")
    st=$(sed -n 's/^exit \([0-9]*\) after.*/\1/p' "$dir/$name.$r")
    ms=$(sed -n 's/^exit [0-9]* after \([0-9]*\) ms/\1/p' "$dir/$name.$r")
    [ "${st:-0}" -ne 0 ] && [ "${ms:-99999}" -lt 10000 ] && [[ $res =~ $1 ]] || ok=0
    summary="$summary; rank $r (exit ${st:-?}, ${ms:-?} ms): ${res#result: }"
    shift
  done
  if [ $ok = 1 ]; then ok "refused rank, $name: every rank fails within 10 s (CC_TIMEOUT=120)${summary}"
  else bad "refused rank, $name: expected every rank nonzero within 10 s naming the refused rank and why${summary}"; fi
}
t0=$(date +%s)
for name in token notoken notoken0 world; do refused_job "$name"; done
wait
tk='CC_ERR_AUTH.*rank 1 \(from 127\.0\.0\.1\) was refused.*CC_TOKEN differs'
refused_check token "$tk" 'CC_ERR_AUTH.*CC_TOKEN differs' "$tk"
tk='CC_ERR_AUTH.*rank 1 \(from 127\.0\.0\.1\) was refused.*it has no CC_TOKEN, while rank 0 has one'
refused_check notoken "$tk" 'CC_ERR_AUTH.*requires a token.*this rank has none' "$tk"
tk='CC_ERR_AUTH.*rank 0 at .*it has no token \(CC_TOKEN\) and this rank has one'
refused_check notoken0 'CC_ERR_AUTH.*rank [12] \(from 127\.0\.0\.1\) was refused.*it has a CC_TOKEN, while rank 0 has none' "$tk" "$tk"
refused_check world 'CC_ERR_MISMATCH.*rank 2 \(from 127\.0\.0\.1\) was refused.*says the world has 4 ranks, rank 0 says 3' \
  'CC_ERR_MISMATCH.*rank 0 failed the rendezvous.*rank 2 .*was refused.*world has 4 ranks, rank 0 says 3' \
  'CC_ERR_MISMATCH.*rank 0 .*refused this rank.*says the world has 3 ranks, this rank says 4'
# rank 0 logs each refusal (WARN, the default level) naming the address and the claimed rank
if grep -q 'WARN comm_init: rank 0: refused a connection from 127\.0\.0\.1 claiming to be rank 1 of 3: its CC_TOKEN differs' "$dir/token.0" &&
   [ "$(grep -c 'refused a connection from' "$dir/world.0")" -le 2 ]; then
  ok "refused rank: rank 0 logs the refusal with the address and claimed rank, once per address, rank and reason ($(grep -c 'refused a connection from' "$dir/world.0") line(s) for rank 2's repeated tries)"
else bad "refused rank: rank 0's log: $(grep -h 'refused a connection' "$dir/token.0" "$dir/world.0" | head -5)"; fi
echo "(the four refused-rank jobs took $(($(date +%s) - t0)) s together)"

echo "rendezvous: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
