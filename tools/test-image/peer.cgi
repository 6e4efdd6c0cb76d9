#!/bin/sh
# /cgi-bin/peer?<IPv4> of the test guest's HTTP responder: fetch / from that
# address (3 s at most) and answer what it said (the HTTP response, headers
# and all), or "peer unreachable". busybox nc, not wget: busybox-static's
# wget crashes (SIGSEGV) on Debian 12, even on a numeric address.
echo 'Content-Type: text/plain'
echo
case $QUERY_STRING in
    *[!0-9.]*|'') echo 'usage: /cgi-bin/peer?<IPv4 address>'; exit 0 ;;
esac
printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 3 "$QUERY_STRING" 80 2>/dev/null ||
    echo 'peer unreachable'
