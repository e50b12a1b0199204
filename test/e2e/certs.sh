# shellcheck shell=bash
# test/e2e/certs.sh — self-made PKI for the e2e cluster (openssl), sourced by run.sh.
#
#   certs_make DIR NODE_NAME NODE_IP   CA, serving and client certificates, SA key pair
#   kubeconfig_write FILE SERVER DIR NAME   kubeconfig using DIR/NAME.{crt,key}
#
# Everything is valid for 2 days and lives in DIR (the run's temp dir).

certs__ec_key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

# certs__leaf DIR NAME SUBJECT EKU [SAN]
certs__leaf() {
	local dir=$1 name=$2 subj=$3 eku=$4 san=${5:-}
	certs__ec_key "$dir/$name.key"
	{
		echo "basicConstraints = critical, CA:FALSE"
		echo "keyUsage = critical, digitalSignature, keyEncipherment"
		echo "extendedKeyUsage = $eku"
		[ -z "$san" ] || echo "subjectAltName = $san"
	} >"$dir/$name.ext"
	openssl req -new -key "$dir/$name.key" -subj "$subj" -out "$dir/$name.csr" 2>/dev/null
	openssl x509 -req -in "$dir/$name.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
		-days 2 -extfile "$dir/$name.ext" -out "$dir/$name.crt" 2>/dev/null
	rm -f "$dir/$name.csr" "$dir/$name.ext"
}

certs_make() {
	local dir=$1 node=$2 ip=$3
	mkdir -p "$dir"
	certs__ec_key "$dir/ca.key"
	openssl req -x509 -new -key "$dir/ca.key" -subj "/CN=minicri-e2e-ca" -days 2 \
		-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
		-out "$dir/ca.crt" 2>/dev/null
	certs__leaf "$dir" apiserver "/CN=kube-apiserver" serverAuth \
		"DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,IP:10.96.0.1,IP:$ip"
	# kubectl (admin), the apiserver's client certificate for kubelets, the components.
	certs__leaf "$dir" admin "/O=system:masters/CN=e2e-admin" clientAuth
	certs__leaf "$dir" apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth
	certs__leaf "$dir" controller-manager "/CN=system:kube-controller-manager" clientAuth
	certs__leaf "$dir" scheduler "/CN=system:kube-scheduler" clientAuth
	certs__leaf "$dir" kubelet "/O=system:nodes/CN=system:node:$node" clientAuth
	# The kubelet's serving certificate (the apiserver does not verify it; kubectl
	# exec/logs/port-forward go apiserver -> kubelet).
	certs__leaf "$dir" kubelet-serving "/CN=$node" serverAuth "DNS:$node,IP:$ip,IP:127.0.0.1"
	# Service account token signing.
	openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$dir/sa.key" 2>/dev/null
	openssl pkey -in "$dir/sa.key" -pubout -out "$dir/sa.pub" 2>/dev/null
	chmod 0600 "$dir"/*.key
}

kubeconfig_write() {
	local file=$1 server=$2 dir=$3 name=$4
	cat >"$file" <<-EOF
		apiVersion: v1
		kind: Config
		clusters:
		- name: e2e
		  cluster:
		    server: $server
		    certificate-authority: $dir/ca.crt
		users:
		- name: $name
		  user:
		    client-certificate: $dir/$name.crt
		    client-key: $dir/$name.key
		contexts:
		- name: e2e
		  context: {cluster: e2e, user: $name}
		current-context: e2e
	EOF
}
