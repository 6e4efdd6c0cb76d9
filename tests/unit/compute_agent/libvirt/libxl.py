"""libvirt's libxl driver as it reports preserved domains, over libvirt's
test driver (which cannot: a node file's SHUTOFF runstate is inactive, with
reason 0).

With ``on_poweroff``/``on_crash`` ``preserve``, libxl marks a guest that
powered off or crashed SHUTOFF with reason SHUTDOWN or CRASHED and leaves
it defined *and active* until it is destroyed (``libxlDomainShutdownThread``
in libvirt's ``src/libxl/libxl_domain.c``). :class:`Libxl` wraps a test
driver connection so that a domain the test preserves reads that way, until
it is destroyed or started again; :func:`emulate` patches ``libvirt.open``.
"""

import libvirt

OFF = libvirt.VIR_DOMAIN_SHUTOFF
LIBXL_REASON = {'guest': libvirt.VIR_DOMAIN_SHUTOFF_SHUTDOWN,
                'crashed': libvirt.VIR_DOMAIN_SHUTOFF_CRASHED}


class Libxl:
    """What libvirt's libxl driver says of preserved domains, over the test
    driver: ``preserve(uuid, why)`` makes a running domain read as libxl
    leaves a guest that powered off (``guest``) or crashed (``crashed``)."""

    def __init__(self):
        self.preserved = {}         # uuid -> libvirt SHUTOFF reason code

    def preserve(self, uuid, why):
        self.preserved[uuid] = LIBXL_REASON[why]

    def wrap_conn(self, conn):
        return _Conn(conn, self)

    def wrap_dom(self, dom):
        return _Dom(dom, self) if dom is not None else None

    def state_of(self, dom, state, reason):
        code = self.preserved.get(dom.UUIDString())
        if code is not None and dom.isActive():
            return [OFF, code]
        return [state, reason]


class _Conn:
    def __init__(self, conn, libxl):
        self._conn, self._libxl = conn, libxl

    def __getattr__(self, name):
        return getattr(self._conn, name)

    def lookupByUUIDString(self, uuid):
        return self._libxl.wrap_dom(self._conn.lookupByUUIDString(uuid))

    def defineXML(self, xml):
        return self._libxl.wrap_dom(self._conn.defineXML(xml))

    def listAllDomains(self, flags=0):
        return [self._libxl.wrap_dom(d)
                for d in self._conn.listAllDomains(flags)]

    def getAllDomainStats(self, stats=0, flags=0):
        out = []
        for dom, values in self._conn.getAllDomainStats(stats, flags):
            state, reason = self._libxl.state_of(
                dom, values['state.state'], values['state.reason'])
            out.append((self._libxl.wrap_dom(dom), dict(
                values, **{'state.state': state, 'state.reason': reason})))
        return out


class _Dom:
    def __init__(self, dom, libxl):
        self._dom, self._libxl = dom, libxl

    def __getattr__(self, name):
        return getattr(self._dom, name)

    def state(self, flags=0):
        return self._libxl.state_of(self._dom, *self._dom.state(flags))

    def connect(self):
        return self._libxl.wrap_conn(self._dom.connect())

    def create(self):
        self._libxl.preserved.pop(self._dom.UUIDString(), None)  # a new run
        return self._dom.create()


def emulate(monkeypatch):
    """Every libvirt connection opened from now on (until the test ends)
    is wrapped; returns the :class:`Libxl` to preserve domains with."""
    emulated = Libxl()
    real_open = libvirt.open
    monkeypatch.setattr(libvirt, 'open',
                        lambda uri: emulated.wrap_conn(real_open(uri)))
    return emulated
