import os

print("about to vanish", flush=True)
os._exit(7)
