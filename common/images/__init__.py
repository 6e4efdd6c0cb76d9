"""Images: where their bytes are stored (:mod:`.store`), what their content
is allowed to be (:mod:`.formats`) and the capabilities that let an agent
read or write one image without database credentials (:mod:`.grants`)."""
