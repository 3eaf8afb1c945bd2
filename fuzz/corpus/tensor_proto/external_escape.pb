Bwj
locationup/secret.binj
offset0j
length16p