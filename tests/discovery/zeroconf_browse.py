# SPDX-License-Identifier: Apache-2.0
"""Browses a DNS-SD type with python3-zeroconf (an mDNS implementation of its own, not Avahi)
on one interface address for a while and prints what it resolved as JSON:
[{"name", "port", "addresses", "txt"}]. Usage: zeroconf_browse.py TYPE ADDRESS SECONDS"""

import json
import sys
import time

import zeroconf


def main():
    service_type, address, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    zc = zeroconf.Zeroconf(interfaces=[address])
    found = {}

    class Listener(zeroconf.ServiceListener):
        def add_service(self, z, type_, name):
            found[name] = z.get_service_info(type_, name, 3000)

        def update_service(self, z, type_, name):
            found[name] = z.get_service_info(type_, name, 3000)

        def remove_service(self, z, type_, name):
            found.pop(name, None)

    zeroconf.ServiceBrowser(zc, service_type + ".local.", Listener())
    time.sleep(seconds)
    out = []
    for name, info in sorted(found.items()):
        if info is None:
            continue
        out.append({
            "name": name[: -len(service_type + ".local.") - 1],
            "port": info.port,
            "addresses": info.parsed_addresses(),
            "txt": {k.decode(): (v or b"").decode() for k, v in info.properties.items()},
        })
    zc.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
