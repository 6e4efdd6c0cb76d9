"""Every scenario, in the order of issue 8's table, then issue 21's,
then issue 26's."""

from bench import build_one
from bench import burst
from bench import burst_rabbit
from bench import conductors
from bench import conflicts
from bench import delete
from bench import image_cached_build
from bench import image_transfer
from bench import memory
from bench import reports
from bench import scheduler
from bench import server_list
from bench import shutdown
from bench import shutdown_libvirt

ALL = {module.NAME: module for module in (
    build_one, burst, delete, burst_rabbit, shutdown, shutdown_libvirt,
    reports, scheduler, conflicts, memory, image_transfer,
    image_cached_build, server_list, conductors)}
