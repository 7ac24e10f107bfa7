"""``benchhub-agent study``: one benchmark over a matrix of varied filesystems, mount
options, I/O schedulers, server settings, servers, protocols or CPU placements, the
machine restored afterwards, the runs published as one study (options in :mod:`.options`,
the matrix in :mod:`.plan`, the servers and connections in :mod:`.servers`, the
machine's changes in :mod:`.machine` and :mod:`.scratch`, the settings in :mod:`.config`,
the data's placement in :mod:`.placement`, the runs in :mod:`.cells`, the whole in
:mod:`.runner`, ``--like`` in :mod:`.like`)."""
