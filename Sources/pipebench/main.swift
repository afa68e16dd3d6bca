print("pipebench")
