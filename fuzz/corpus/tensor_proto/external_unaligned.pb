Bwj
locationw.binj
offset4j
length16p