"""``benchhub-agent study``: one benchmark over a matrix of varied filesystems, mount
options or I/O schedulers, the machine restored afterwards, the runs published as one
study (options in :mod:`.options`, the matrix in :mod:`.plan`, the machine's changes in
:mod:`.machine` and :mod:`.scratch`, the data's placement in :mod:`.placement`, the run
in :mod:`.runner`, ``--like`` in :mod:`.like`)."""
