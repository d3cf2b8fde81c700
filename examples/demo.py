# A script of the kind a model writes: several tool calls and the logic
# between them run in one execution; only what it prints goes back.
from hermes_tools import read_file, terminal, write_file

# 1. Write a small CSV through the write_file tool.
rows = ["city,population"] + [f"city{i},{(i * 7919) % 100000}" for i in range(1, 21)]
w = write_file("cities.csv", "\n".join(rows) + "\n")
print(f"wrote {w['bytes_written']} bytes")

# 2. Read it back and parse the numbered lines.
r = read_file("cities.csv", limit=100)
lines = [line.split("|", 1)[1] for line in r["content"].splitlines() if "|" in line]
data = [line.split(",") for line in lines[1:] if line]
biggest = max(data, key=lambda row: int(row[1]))
print(f"read {r['total_lines']} lines; largest: {biggest[0]} ({biggest[1]})")

# 3. Ask the shell, through the terminal tool.
t = terminal("wc -l cities.csv && uname -s")
print("terminal says:", " / ".join(t["output"].split("\n")), f"(exit {t['exit_code']})")
