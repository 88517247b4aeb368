"""A session folder is data that may come from anyone: safe paths, one writer, valid events.

A folder under ``.torchdoctor/sessions`` can arrive in a cloned repository or
a colleague's tarball. These modules are what every reader and writer of one
goes through: ``paths`` keeps each file access inside the folder and refuses
symbolic links, ``lock`` lets one process write at a time, and ``events``
checks every journal event before anything trusts its shape.
"""
