"""The text stages: statistical boilerplate stripping and sentence chunking, with their compiled kernels.

``boilerplate`` keys lines and decides chrome by document frequency, ``chunk`` cuts clean pages into
sentence-bounded chunks with page and character offsets; each has a ``_kernel`` twin compiled with
numba for large inputs, and ``lines`` holds the line records and abbreviations both share.
"""
