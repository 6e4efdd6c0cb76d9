"""Guest networking on the agent's side: the ports a build carries
(:mod:`.ports`) and the host's DHCP service for them (:mod:`.dhcp`)."""
