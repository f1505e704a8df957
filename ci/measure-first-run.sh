#!/usr/bin/env bash
# Times the first run (`bash ci/smoke.sh`, apt downloads included) of this branch's HEAD on a
# fresh Debian 12: a debootstrap'd minbase bookworm chroot (the debian:12 image's package set
# and apt sources), made once and copied afresh for every measurement. Needs root and the
# network. CI=true as on a CI runner (install-deps then unpacks without fsync).
#
#   sudo bash ci/measure-first-run.sh [WORKDIR]     (default /var/tmp/attngate-first-run)
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-/var/tmp/attngate-first-run}
pristine=$work/chroot-pristine root=$work/chroot-run
mkdir -p "$work"
if [ ! -d "$pristine/usr" ]; then
  debootstrap --variant=minbase bookworm "$pristine" http://deb.debian.org/debian > "$work/debootstrap.log"
fi
rm -rf "$root"
cp -a "$pristine" "$root"
git clone -q "file://$repo" "$root/root/attngate"
git -C "$root/root/attngate" log --oneline -1
mount --bind /dev "$root/dev"; mount --bind /dev/pts "$root/dev/pts"; mount -t proc proc "$root/proc"; mount -t sysfs sys "$root/sys"
cp /etc/resolv.conf "$root/etc/resolv.conf"
echo "load before: $(cat /proc/loadavg)"
start=$(date +%s)
chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=dumb CI=true \
  bash -c "cd /root/attngate && time bash ci/smoke.sh" > "$work/smoke.log" 2>&1
rc=$?
end=$(date +%s)
echo "load after: $(cat /proc/loadavg)"
umount "$root/sys" "$root/proc" "$root/dev/pts" "$root/dev"
# The phases, from the files each one leaves: the last dpkg entry, the configured cache, the binary, the results.
stamp() { stat -c %Y "$1" 2>/dev/null || echo "$start"; }
apt=$(date -d "$(tail -1 "$root/var/log/dpkg.log" | cut -c1-19)" +%s)
configured=$(stamp "$root/root/attngate/build/CMakeCache.txt") built=$(stamp "$root/root/attngate/build/attngate")
echo "exit $rc; total $((end - start)) s: apt $((apt - start)) s, configure $((configured - apt)) s," \
     "build $((built - configured)) s, smoke gate $((end - built)) s"
tail -4 "$work/smoke.log"
