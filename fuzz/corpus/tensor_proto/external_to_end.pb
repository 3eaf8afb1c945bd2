Bwj
locationw.binj
offset192p