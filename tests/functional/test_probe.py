import time
from compute_agent.virt import fake
from tests.functional.conftest import build, act, summary, last_action, used, wait_instance, set_opts

def test_probe(conf, make_plane, ctx, admin):
    set_opts(conf, 'fake_driver', hang_timeout=4.0)
    plane = make_plane()
    inst = build(plane, ctx)
    host = inst['host']
    fake.HostStore(conf.state_dir, host).set_fault('power_off', 'hang')
    plane.client.run_action(ctx, inst['uuid'], 'stop', {})
    time.sleep(0.5)
    print(open(conf.state_dir + '/agent/%s-tasks.json' % host).read())
    t = time.monotonic()
    plane.stop_agent(host)
    print('stop took', time.monotonic() - t)
    print(summary(plane.statedb.get_instance(inst['uuid'])), last_action(plane, inst['uuid']))
