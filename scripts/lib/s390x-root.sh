# shellcheck shell=bash
# A root for the s390x sides under qemu-user: the lane's sysroot,
# hard-linked, with Debian's ibmca engine package unpacked into it and a
# private /dev/shm (libica's counters stay inside the run). With CARDS > 0,
# that many online accelerator cards (type TYPE, default CEX7A) appear
# under its /sys/devices/ap, which libica's and the engine's sysfs scans
# read (qemu resolves absolute paths inside the root first).
#
#   s390x_make_root DIR SYSROOT ENGINE_DEB CARDS [TYPE]
s390x_make_root() {
  local root=$1 sysroot=$2 engine_deb=$3 cards=$4 type=${5:-CEX7A} i dir
  rm -rf "$root"
  cp -al "$sysroot" "$root"
  dpkg -x "$engine_deb" "$root"
  mkdir -p "$root/dev/shm"
  for ((i = 0; i < cards; i++)); do
    dir=$(printf '%s/sys/devices/ap/card%02d' "$root" "$i")
    mkdir -p "$dir"
    echo "$type" >"$dir/type"
    echo 1 >"$dir/online"
  done
}
