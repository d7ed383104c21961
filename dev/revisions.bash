# revisions.bash - sourced by dev/same_pair.sh and dev/call_cost.sh (TOP:
# the repository): the cc.h of each git revision named, then the working
# tree's, each in a folder of its own.
#
#   revisions_headers DIR REV...   writes DIR/NAME/cc.h for each REV (NAME: its
#                                  short hash) and DIR/work/cc.h (the working
#                                  tree's); the names, in order, in rev_names
revisions_headers() {
  local dir=$1 rev name
  shift
  rev_names=()
  for rev in "$@"; do
    name=$(git -C "$TOP" rev-parse --short "$rev" 2>/dev/null) &&
      mkdir -p "$dir/$name" && git -C "$TOP" show "$rev:cc.h" > "$dir/$name/cc.h" ||
      { echo "$(basename "$0"): no cc.h at revision '$rev'" >&2; return 2; }
    rev_names+=("$name")
  done
  mkdir -p "$dir/work" && cp "$TOP/cc.h" "$dir/work/cc.h" || return 1
  rev_names+=(work)
}
