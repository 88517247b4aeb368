import sys
import time

print("going to sleep", file=sys.stderr, flush=True)
while True:
    time.sleep(1)
