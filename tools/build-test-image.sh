#!/usr/bin/env bash
# Build Tristate's test guest: a small bootable disk image (raw or qcow2),
# made only from Debian packages and without loop devices or mounts.
#   tools/build-test-image.sh OUTPUT [--format raw|qcow2]
#
# The disk: an MBR (syslinux's mbr.bin, partition table by sfdisk) and one
# FAT partition written with mtools, holding SYSLINUX, Debian's cloud kernel
# and an initramfs of busybox-static, tools/test-image/init (the guest's one
# init script: it prints BOOT-OK on the serial console, then powers off on
# the ACPI power button and powers off or reboots on a line typed on the
# console; it also brings up network cards with DHCP, /etc/udhcpc.script
# from tools/test-image/udhcpc.script, and serves HTTP, with
# tools/test-image/peer.cgi; it mounts the config drive, installs its SSH
# key and runs its user data) and the kernel modules named in
# tools/test-image/modules, and Debian's dropbear SSH server
# (dropbear-bin) with the shared libraries it loads (DROPBEAR_PACKAGES). The
# kernel, busybox and those are fetched with `apt-get download` and unpacked
# with dpkg-deb into a temporary directory: nothing is installed on the
# host.
# Needs (Debian packages): mtools, syslinux, syslinux-common, fdisk, and
# qemu-utils for qcow2; tools/run-tests.sh installs them.
#
# Cache: the raw image is kept in $TRISTATE_TEST_IMAGE_CACHE (by default
# /var/cache/tristate-test-image as root, ~/.cache/tristate-test-image for
# another user) under a key made of the package versions and of this
# script's, the init's and the module list's contents; a later call with the
# same key only copies (or converts) it. Older entries are removed.
# Exit status: 0 built, 2 bad usage or missing tool, 3 apt cannot fetch the
# packages (no network, no package lists), 1 anything else.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
source_dir=$here/test-image
cache=${TRISTATE_TEST_IMAGE_CACHE:-/var/cache/tristate-test-image}
if [ -z "${TRISTATE_TEST_IMAGE_CACHE:-}" ] && [ "$(id -u)" -ne 0 ]; then
    cache=${XDG_CACHE_HOME:-$HOME/.cache}/tristate-test-image
fi
mbr=/usr/lib/syslinux/mbr/mbr.bin
part_start=2048                 # sectors: the partition starts at 1 MiB
# dropbear and the packages of the libraries it and they load
DROPBEAR_PACKAGES='dropbear-bin libtomcrypt1 libtommath1 libgmp10 zlib1g
                   libcrypt1 libc6'
DROPBEAR_LIBS='ld-linux-x86-64.so.2 libc.so.6 libcrypt.so.1 libz.so.1
               libtomcrypt.so.1 libtommath.so.1 libgmp.so.10'

usage() {
    echo "usage: $0 OUTPUT [--format raw|qcow2]" >&2
    exit 2
}

fail() {                        # status message...
    local status=$1
    shift
    echo "build-test-image: $*" >&2
    exit "$status"
}

parse_args() {
    output='' format=raw
    while [ $# -gt 0 ]; do
        case $1 in
            --format) [ $# -ge 2 ] || usage; format=$2; shift 2 ;;
            --format=*) format=${1#--format=}; shift ;;
            -*) usage ;;
            *) [ -z "$output" ] || usage; output=$1; shift ;;
        esac
    done
    [ -n "$output" ] || usage
    case $format in
        raw|qcow2) ;;
        *) fail 2 "--format must be raw or qcow2, not '$format'" ;;
    esac
}

check_tools() {
    local tool package
    for tool in mformat:mtools mcopy:mtools syslinux:syslinux \
                sfdisk:fdisk apt-get:apt dpkg-deb:dpkg flock:util-linux; do
        package=${tool#*:}
        command -v "${tool%%:*}" >/dev/null ||
            fail 2 "${tool%%:*} not found: apt-get install $package"
    done
    [ -r "$mbr" ] || fail 2 "$mbr not found: apt-get install syslinux-common"
    if [ "$format" = qcow2 ]; then
        command -v qemu-img >/dev/null ||
            fail 2 "qemu-img not found: apt-get install qemu-utils"
    fi
}

candidate() {                   # package -> the version apt would fetch
    apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/ { print $2 }'
}

installed() {                   # package -> its installed version
    dpkg-query -W -f '${Version}' "$1" 2>/dev/null || true
}

# The versioned kernel package (linux-image-6.1.0-N-cloud-amd64) and the
# versions of everything the image is made of: kernel_pkg, versions, key.
resolve_versions() {
    kernel_pkg=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null |
                 awk '$1 == "Depends:" && $2 ~ /^linux-image-/ { print $2; exit }')
    [ -n "$kernel_pkg" ] ||
        fail 3 "apt knows no linux-image-cloud-amd64 (apt-get update?)"
    kernel_version=$(candidate "$kernel_pkg")
    busybox_version=$(candidate busybox-static)
    case "$kernel_version $busybox_version" in
        *'(none)'*|' '*|*' ') fail 3 "apt has no candidate for $kernel_pkg or busybox-static" ;;
    esac
    versions="$kernel_pkg=$kernel_version busybox-static=$busybox_version"
    local package version
    dropbear_debs=()
    for package in $DROPBEAR_PACKAGES; do
        version=$(candidate "$package")
        case $version in
            ''|'(none)') fail 3 "apt has no candidate for $package" ;;
        esac
        dropbear_debs+=("$package=$version")
        versions+=" $package=$version"
    done
    versions+=" syslinux=$(installed syslinux)"
    versions+=" syslinux-common=$(installed syslinux-common)"
    versions+=" mtools=$(installed mtools)"
    key=$( (echo "$versions"
            cat "$0" "$source_dir/init" "$source_dir/modules" \
                "$source_dir/udhcpc.script" "$source_dir/peer.cgi") |
          sha256sum | cut -c1-16)
}

# Unpack the kernel and busybox-static into $work (kernel/, busybox/).
fetch_packages() {
    local apt_opts=()
    # root's apt downloads as _apt, which cannot write into our 0700 dir
    [ "$(id -u)" -ne 0 ] || apt_opts=(-o APT::Sandbox::User=root)
    mkdir "$work/debs"
    if ! (cd "$work/debs" &&
          apt-get download -qq "${apt_opts[@]}" \
              "$kernel_pkg=$kernel_version" \
              "busybox-static=$busybox_version" "${dropbear_debs[@]}"); then
        fail 3 "apt-get download of the image's packages failed"
    fi
    dpkg-deb -x "$work/debs/${kernel_pkg}_"*.deb "$work/kernel"
    dpkg-deb -x "$work/debs/busybox-static_"*.deb "$work/busybox"
    local package
    for package in $DROPBEAR_PACKAGES; do
        dpkg-deb -x "$work/debs/${package}_"*.deb "$work/dropbear"
    done
}

# dropbear, the libraries it loads, and root's account in $1 (the root).
install_dropbear() {
    local root=$1 from=$work/dropbear lib found
    mkdir -p "$root/usr/sbin" "$root/lib/x86_64-linux-gnu" "$root/lib64" \
             "$root/etc/dropbear" "$root/root"
    cp "$from/usr/sbin/dropbear" "$root/usr/sbin/dropbear"
    for lib in $DROPBEAR_LIBS; do
        found=$(find "$from" -path "*/x86_64-linux-gnu/$lib" | head -n 1)
        [ -n "$found" ] || fail 1 "no $lib in $DROPBEAR_PACKAGES"
        cp -L "$found" "$root/lib/x86_64-linux-gnu/$lib"
    done
    ln -s ../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 \
        "$root/lib64/ld-linux-x86-64.so.2"
    echo 'root:x:0:0:root:/root:/bin/sh' >"$root/etc/passwd"
    echo 'root:x:0:' >"$root/etc/group"
    echo /bin/sh >"$root/etc/shells"
    chmod 700 "$root/root"
}

# $work/root: busybox and its applets, the init, acpid's power-button
# action, the listed modules and what they depend on (busybox's depmod
# makes modules.dep, for its modprobe in the guest).
make_root() {
    local root=$work/root bb=$work/busybox/bin/busybox applet module line dep
    local kmods
    kmods=$(echo "$work"/kernel/lib/modules/*)
    uname=${kmods##*/}
    mkdir -p "$root/bin" "$root/etc/acpi/PWRF" "$root/lib/modules/$uname"
    cp "$bb" "$root/bin/busybox"
    for applet in $("$bb" --list); do
        [ "$applet" = busybox ] || ln -s busybox "$root/bin/$applet"
    done
    install -m 755 "$source_dir/init" "$root/init"
    install -m 755 "$source_dir/udhcpc.script" "$root/etc/udhcpc.script"
    mkdir -p "$root/www/cgi-bin"
    install -m 755 "$source_dir/peer.cgi" "$root/www/cgi-bin/peer"
    printf '#!/bin/sh\nexec /init poweroff\n' >"$root/etc/acpi/PWRF/00000080"
    chmod 755 "$root/etc/acpi/PWRF/00000080"
    cp "$source_dir/modules" "$root/etc/modules"
    install_dropbear "$root"

    "$bb" depmod -b "$work/kernel" "$uname"
    while read -r module; do
        case $module in ''|'#'*) continue ;; esac
        line=$(grep -E "(^|/)$module\\.ko:" "$kmods/modules.dep") ||
            fail 1 "no module $module in $kernel_pkg"
        for dep in ${line/:/}; do
            mkdir -p "$root/lib/modules/$uname/${dep%/*}"
            cp "$kmods/$dep" "$root/lib/modules/$uname/$dep"
        done
    done <"$source_dir/modules"
    cp "$kmods/modules.builtin" "$kmods/modules.order" \
       "$root/lib/modules/$uname/"
    "$bb" depmod -b "$root" "$uname"
    (cd "$root" && find . | "$bb" cpio -o -H newc 2>/dev/null) |
        gzip -9 >"$work/initrd.gz"
}

# The raw disk image $work/disk.raw: MBR, one bootable FAT partition with
# SYSLINUX, the kernel and the initramfs. All on the file, at an offset.
make_disk() {
    local disk=$work/disk.raw cfg=$work/syslinux.cfg kernel part_mib used
    kernel=$(echo "$work"/kernel/boot/vmlinuz-*)
    used=$(du -k "$kernel" "$work/initrd.gz" | awk '{ k += $1 } END { print k }')
    part_mib=$(( used / 1024 + 8 ))     # room for FAT and SYSLINUX
    truncate -s $(( (part_mib + 1) * 1024 * 1024 )) "$disk"
    echo "start=$part_start, type=e, bootable" | sfdisk --quiet "$disk"

    local fs="$disk@@$(( part_start * 512 ))"
    # geometry: 64 heads x 32 sectors = 1 MiB a cylinder; hidden sectors:
    # the partition's start, which the boot sector must know
    mformat -i "$fs" -t "$part_mib" -h 64 -n 32 -H "$part_start" \
        -v TRISTATE ::
    syslinux --offset $(( part_start * 512 )) --install "$disk"
    cat >"$cfg" <<EOF
SERIAL 0 115200
DEFAULT tristate
PROMPT 0
TIMEOUT 0
LABEL tristate
  KERNEL /vmlinuz
  INITRD /initrd.gz
  APPEND console=ttyS0 quiet panic=10
EOF
    mcopy -i "$fs" "$kernel" ::vmlinuz
    mcopy -i "$fs" "$work/initrd.gz" ::initrd.gz
    mcopy -i "$fs" "$cfg" ::syslinux.cfg
    dd if="$mbr" of="$disk" bs=440 count=1 conv=notrunc status=none
}

# Build into the cache unless it holds this key already; $cached is the
# cached raw image. Under a lock, so that parallel calls build once.
ensure_cached() {
    cached=$cache/test-image-$key.raw
    mkdir -p "$cache"
    exec 9>"$cache/.lock"
    flock 9
    if [ ! -s "$cached" ]; then
        echo "build-test-image: building ($versions)" >&2
        work=$(mktemp -d "${TMPDIR:-/tmp}/tristate-test-image.XXXXXX")
        trap 'rm -rf "$work"' EXIT
        fetch_packages
        make_root
        make_disk
        chmod 644 "$work/disk.raw"
        mv "$work/disk.raw" "$cached.tmp"
        mv "$cached.tmp" "$cached"
        find "$cache" -maxdepth 1 -name 'test-image-*.raw' \
            ! -name "${cached##*/}" -delete
        rm -rf "$work"
        trap - EXIT
    fi
    exec 9>&-
}

write_output() {
    local tmp
    tmp=$(dirname "$output")/.$(basename "$output").$$
    trap 'rm -f "$tmp"' EXIT
    if [ "$format" = qcow2 ]; then
        qemu-img convert -f raw -O qcow2 "$cached" "$tmp"
    else
        cp --sparse=always "$cached" "$tmp"
    fi
    chmod 644 "$tmp"
    mv "$tmp" "$output"
    trap - EXIT
    echo "$output"
}

parse_args "$@"
check_tools
resolve_versions
ensure_cached
write_output
