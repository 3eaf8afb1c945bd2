Bwj
locationw.binj
offset0j
length16p