{{/* Names and fragments shared by the templates. */}}

{{/* The labels every object carries: linkerd2-cni's, then the operator's commonLabels. */}}
{{- define "cni-chainer.labels" -}}
linkerd.io/cni-resource: "true"
app.kubernetes.io/name: cni-chainer
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* The service account the agent and the plugin use, as the API server names it. */}}
{{- define "cni-chainer.username" -}}
system:serviceaccount:{{ .Release.Namespace }}:linkerd-cni
{{- end -}}

{{/*
Where the API server serves ValidatingAdmissionPolicy: the policies, and the grants they narrow
(patch nodes, tokens of the account), are rendered only there. Without a policy, RBAC alone would let
one node's agent change every node.
*/}}
{{- define "cni-chainer.policies" -}}
{{- if .Capabilities.APIVersions.Has "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy" -}}true{{- end -}}
{{- end -}}

{{/* A comma-separated list as JSON strings: "25,587" gives "25","587". */}}
{{- define "cni-chainer.quotedList" -}}
{{- $items := list -}}
{{- range splitList "," (toString .) -}}
{{- $item := trim . -}}
{{- if ne $item "" }}{{ $items = append $items (toJson $item) }}{{ end -}}
{{- end -}}
{{- join "," $items -}}
{{- end -}}

{{/* A comma-separated list of ports as JSON numbers: "80,8080" gives 80,8080. */}}
{{- define "cni-chainer.numberList" -}}
{{- $items := list -}}
{{- range splitList "," (toString .) -}}
{{- $item := trim . -}}
{{- if ne $item "" }}{{ $items = append $items (int $item | toString) }}{{ end -}}
{{- end -}}
{{- join "," $items -}}
{{- end -}}

{{/*
The plugin's own config (CNI_NETWORK_CONFIG): the JSON linkerd2-cni's chart renders for the same
values, field for field and in the same order (test/deploy/chart.test.ts compares them).
*/}}
{{- define "cni-chainer.networkConfig" -}}
{
  "name": "linkerd-cni",
  "type": "linkerd-cni",
  "log_level": {{ .Values.logLevel | toString | toJson }},
  "kubernetes": {
    "kubeconfig": "__KUBECONFIG_FILEPATH__"
  },
  "linkerd": {
    "incoming-proxy-port": {{ int .Values.inboundProxyPort }},
    "outgoing-proxy-port": {{ int .Values.outboundProxyPort }},
    "proxy-uid": {{ int .Values.proxyUID }},
    {{- if ge (int .Values.proxyGID) 0 }}
    "proxy-gid": {{ int .Values.proxyGID }},
    {{- end }}
    "ports-to-redirect": [{{ include "cni-chainer.numberList" .Values.portsToRedirect }}],
    "inbound-ports-to-ignore": [{{ include "cni-chainer.quotedList" (printf "%v,%v,%v" .Values.proxyAdminPort .Values.proxyControlPort .Values.ignoreInboundPorts) }}],
    {{- if .Values.ignoreOutboundPorts }}
    "outbound-ports-to-ignore": [{{ include "cni-chainer.quotedList" .Values.ignoreOutboundPorts }}],
    {{- end }}
    "simulate": false,
    "use-wait-flag": {{ .Values.useWaitFlag }},
    "iptables-mode": {{ .Values.iptablesMode | toJson }},
    "ipv6": {{ not .Values.disableIPv6 }}
  }
}
{{- end -}}

{{/* A container's resources from linkerd2-cni's shape: {cpu,memory,ephemeral-storage}.{request,limit}. */}}
{{- define "cni-chainer.resources" -}}
{{- $limits := dict -}}
{{- $requests := dict -}}
{{- range $name := list "cpu" "memory" "ephemeral-storage" -}}
{{- $resource := index $ $name | default dict -}}
{{- with $resource.limit }}{{ $_ := set $limits $name (toString .) }}{{ end -}}
{{- with $resource.request }}{{ $_ := set $requests $name (toString .) }}{{ end -}}
{{- end -}}
{{- if or $limits $requests -}}
resources:
  {{- with $limits }}
  limits:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $requests }}
  requests:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}
{{- end -}}

{{/* The grace period: the agent's own cleanup deadline, and 5 s for the kubelet to see it exit. */}}
{{- define "cni-chainer.gracePeriod" -}}
{{ add (int .Values.agent.shutdownTimeoutSeconds) 5 }}
{{- end -}}
