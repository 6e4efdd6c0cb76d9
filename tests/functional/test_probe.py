import time
from tests.functional.conftest import build, act, summary, last_action, used

def test_probe(plane, ctx, admin):
    t=time.monotonic()
    inst = build(plane, ctx)
    print('build', time.monotonic()-t, summary(inst))
    for a, p in [('stop',{}),('start',{}),('rescue',{}),('unrescue',{}),('stop',{}),('rescue',{}),('unrescue',{}),('start', {}),('resize',{'flavor':'small'}),('confirm_resize',{}),('rebuild',{'image_ref':'debian'})]:
        t=time.monotonic()
        i = act(plane, ctx, inst['uuid'], a, **p)
        print(a, round(time.monotonic()-t,3), summary(i), i['image_ref'], last_action(plane, inst['uuid'])['result'])
    print(used(plane, i['host']))
    i = act(plane, admin, inst['uuid'], 'live_migrate')
    print(summary(i), used(plane,'host1'), used(plane,'host2'))
