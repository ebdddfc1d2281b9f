# tests/esock/nginx_conf.sh: nginx_conf DIR PORT WORKERS writes DIR/nginx.conf
# for an nginx in the foreground that serves DIR/../www on 127.0.0.1:PORT
# with WORKERS worker processes, its pid, logs and temporary files in DIR
# (the preload tests run nginx as root, from scratch folders).
nginx_conf() {
	local dir=$1 port=$2 workers=$3
	cat >"$dir/nginx.conf" <<CONF
daemon off;
user root;
worker_processes $workers;
pid $dir/nginx.pid;
error_log $dir/error.log info;
events { worker_connections 512; use epoll; }
http {
	access_log off;
	sendfile on;
	client_body_temp_path $dir/body;
	proxy_temp_path $dir/proxy;
	fastcgi_temp_path $dir/fcgi;
	uwsgi_temp_path $dir/uwsgi;
	scgi_temp_path $dir/scgi;
	server { listen 127.0.0.1:$port; root $dir/../www; }
}
CONF
}
