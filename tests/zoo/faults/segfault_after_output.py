import ctypes

for step in range(3):
    print(f"step {step} loss 0.{9 - step}", flush=True)
print("saving checkpoint", flush=True)
ctypes.string_at(0)
