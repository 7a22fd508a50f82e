#!/bin/sh
# addgroup/adduser of the offline runtime stand-in (Debian's busybox has neither applet): the
# subset of busybox's options the service Dockerfiles use,
#   addgroup -g GID NAME
#   adduser [-D] [-H] -u UID -G GROUP [-s SHELL] [-h HOME] NAME
# appended to /etc/group and /etc/passwd.
set -e
name=$(basename "$0")
id= group= shell=/sbin/nologin home=/
while getopts 'g:u:G:s:h:DHS' opt; do
  case $opt in
    g | u) id=$OPTARG ;;
    G) group=$OPTARG ;;
    s) shell=$OPTARG ;;
    h) home=$OPTARG ;;
    D | H | S) ;;
    *) echo "$name: unsupported option" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] && [ -n "$id" ] || { echo "usage: addgroup -g GID NAME | adduser -u UID -G GROUP NAME" >&2; exit 2; }
case $name in
  addgroup) echo "$1:x:$id:" >>/etc/group ;;
  adduser)
    gid=$(awk -F: -v g="${group:-$1}" '$1 == g { print $3 }' /etc/group)
    [ -n "$gid" ] || { echo "adduser: no group ${group:-$1}" >&2; exit 1; }
    echo "$1:x:$id:$gid::$home:$shell" >>/etc/passwd
    ;;
  *) echo "$name: called as addgroup or adduser only" >&2; exit 2 ;;
esac
