Bwj
locationsub/../w.binp