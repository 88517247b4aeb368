import sys

line = "x" * 1023 + "\n"
for _ in range(8 * 1024):
    sys.stdout.write(line)
    sys.stderr.write(line)
print("last line of stdout")
raise ValueError("failed after printing a lot")
