# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Route tables parsed once per distinct text: every host still gets its own answer and its own list."""

from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text import host_evidence

# /proc/net/route: lab0 holds 192.168.50.0/24, the default route leaves by mgmt0 via 10.0.2.2.
ROUTE = ("Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
         "mgmt0\t00000000\t0202000A\t0003\t0\t0\t100\t00000000\t0\t0\t0\n"
         "lab0\t0032A8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n")
OTHER = ROUTE.replace("lab0", "lab1")


def _sample(text):
    return {"net": {"route": text}}


def test_hosts_with_the_same_table_get_the_same_route_and_another_table_its_own():
    assert host_evidence.route_to(_sample(ROUTE), "192.168.50.1") == ("lab0", None)
    assert host_evidence.route_to(_sample(ROUTE), "8.8.8.8") == ("mgmt0", "10.0.2.2")
    assert host_evidence.route_to(_sample(OTHER), "192.168.50.1") == ("lab1", None)
    assert host_evidence.route_to(_sample(None), "192.168.50.1") == (None, None)


def test_parse_route_returns_a_list_of_its_own_each_time():
    first = host_evidence.parse_route(ROUTE)
    first.clear()
    assert [row[1] for row in host_evidence.parse_route(ROUTE)] == ["mgmt0", "lab0"]
    assert host_evidence.parse_route(None) == [] and host_evidence.parse_ipv6_route("") == []
