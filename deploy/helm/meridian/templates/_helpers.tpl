{{/*
The chart's name, shortened to the 63 characters of a label value.
*/}}
{{- define "meridian.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The objects' base name: the release name, with the chart's name unless the release name
already contains it.
*/}}
{{- define "meridian.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The name of the cluster-wide objects (the ClusterRole and its binding): the base name prefixed
with the release's namespace, so that releases of the same name in two namespaces (two sites in
one cluster, say) do not claim the same objects.
*/}}
{{- define "meridian.clusterName" -}}
{{- printf "%s-%s" .Release.Namespace (include "meridian.fullname" .) }}
{{- end }}

{{/*
The chart label: name-version.
*/}}
{{- define "meridian.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The labels of every object.
*/}}
{{- define "meridian.labels" -}}
helm.sh/chart: {{ include "meridian.chart" . }}
{{ include "meridian.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
The labels that select the pods.
*/}}
{{- define "meridian.selectorLabels" -}}
app.kubernetes.io/name: {{ include "meridian.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
The ServiceAccount the pods run as.
*/}}
{{- define "meridian.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "meridian.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The Secret holding the admin API's token: an existing one, or the chart's.
*/}}
{{- define "meridian.apiSecretName" -}}
{{- default (printf "%s-api" (include "meridian.fullname" .)) .Values.api.existingSecret }}
{{- end }}

{{/*
The Corefile, rendered from config.corefile.
*/}}
{{- define "meridian.corefile" -}}
{{- tpl .Values.config.corefile . }}
{{- end }}

{{/*
The zones of the Gslb resources' hosts, as a JSON list of {zone, file, parent, negTTL}: those of
k8gb.dnsZones (k8gb's list of {loadBalancedZone, parentZone, dnsZoneNegTTL}), and
k8gb.dnsZone with k8gb.edgeDNSZone (k8gb's older pair); each zone lower-cased without its
trailing dot, its file k8gb.ZONE.yml. It fails the rendering when there is none: only the
default Corefile, the ConfigMap and the ZoneDelegations use it, so that a Corefile of the user's
own does not need the values.
*/}}
{{- define "meridian.k8gbZones" -}}
{{- $zones := list }}
{{- range .Values.k8gb.dnsZones }}
{{- $z := .loadBalancedZone | trimSuffix "." | lower }}
{{- $zones = append $zones (dict "zone" $z "file" (printf "k8gb.%s.yml" $z) "parent" ((.parentZone | default "") | trimSuffix "." | lower) "negTTL" (.dnsZoneNegTTL | default 30)) }}
{{- end }}
{{- with .Values.k8gb.dnsZone }}
{{- $z := . | trimSuffix "." | lower }}
{{- $zones = append $zones (dict "zone" $z "file" (printf "k8gb.%s.yml" $z) "parent" ($.Values.k8gb.edgeDNSZone | trimSuffix "." | lower) "negTTL" 30) }}
{{- end }}
{{- if not $zones }}
{{- fail "k8gb.dnsZone is required with k8gb.enabled and the default Corefile (or k8gb.dnsZones): the zone the Gslb resources' hosts are in, e.g. cloud.example.com" }}
{{- end }}
{{- toJson $zones }}
{{- end }}

{{/*
The other clusters' geo tags: k8gb.extGslbsClusterGeoTags (a list) and
k8gb.extGslbClustersGeoTags (k8gb's comma-separated string, which lists every cluster: this
one's tag is left out of it), in order, without repeats.
*/}}
{{- define "meridian.k8gbTags" -}}
{{- $tags := list }}
{{- range .Values.k8gb.extGslbsClusterGeoTags }}
{{- if not (has . $tags) }}
{{- $tags = append $tags . }}
{{- end }}
{{- end }}
{{- range splitList "," .Values.k8gb.extGslbClustersGeoTags }}
{{- $t := trim . }}
{{- if and $t (ne $t $.Values.k8gb.clusterGeoTag) (not (has $t $tags)) }}
{{- $tags = append $tags $t }}
{{- end }}
{{- end }}
{{- toJson $tags }}
{{- end }}

{{/*
Fails the rendering when two of the container's ports are the same: CoreDNS's health plugin and
the admin API both default to 8080 outside the chart, and a collision would stop the pod at start.
*/}}
{{- define "meridian.checkPorts" -}}
{{- $ports := dict "ports.dns" .Values.ports.dns "ports.ready" .Values.ports.ready "ports.health" .Values.ports.health "metrics.port" .Values.metrics.port }}
{{- if .Values.api.enabled }}
{{- $_ := set $ports "api.port" .Values.api.port }}
{{- end }}
{{- $seen := dict }}
{{- range $name := keys $ports | sortAlpha }}
{{- $port := toString (get $ports $name) }}
{{- if hasKey $seen $port }}
{{- fail (printf "%s and %s are both %s: the container's ports must differ" (get $seen $port) $name $port) }}
{{- end }}
{{- $_ := set $seen $port $name }}
{{- end }}
{{- end }}

{{/*
Fails the rendering when the Corefile and k8gb.enabled disagree: a Corefile of the user's own
serving Gslb resources (a `k8gb` line) without k8gb.enabled, whose ClusterRole would not grant
them, or the reverse; and when this cluster's geo tag is also among the other clusters'.
*/}}
{{- define "meridian.checkK8gb" -}}
{{- $k8gb := regexMatch `(?m)^\s*k8gb(\s|$)` (include "meridian.corefile" .) }}
{{- if and $k8gb (not .Values.k8gb.enabled) }}
{{- fail "the Corefile has a k8gb line but k8gb.enabled is false: set it, so that the ClusterRole grants the Gslb resources" }}
{{- end }}
{{- if and .Values.k8gb.enabled (not $k8gb) }}
{{- fail "k8gb.enabled is true but the Corefile's gslb block has no k8gb line: add one (see the chart's README)" }}
{{- end }}
{{- if and .Values.k8gb.enabled (has .Values.k8gb.clusterGeoTag (include "meridian.k8gbTags" . | fromJsonArray)) }}
{{- fail (printf "k8gb.extGslbsClusterGeoTags has %s, k8gb.clusterGeoTag: list the other clusters only" .Values.k8gb.clusterGeoTag) }}
{{- end }}
{{- if and .Values.k8gb.enabled .Values.k8gb.extdns.enabled (not (index (include "meridian.k8gbZones" . | fromJsonArray) 0).parent) }}
{{- fail "k8gb.extdns.enabled needs the parent of the first zone: k8gb.dnsZones[0].parentZone, or k8gb.edgeDNSZone" }}
{{- end }}
{{- if and .Values.k8gb.extdns.enabled (not .Values.k8gb.clusterExposedIPs) }}
{{- fail "k8gb.extdns.enabled needs k8gb.clusterExposedIPs: the addresses of this cluster's Meridian DNS Service, the glue of its name server" }}
{{- end }}
{{- end }}
