"""The add-on's preferences: where the server is and how to reach it."""

import bpy

ADDON = __package__


class DrapePreferences(bpy.types.AddonPreferences):
    bl_idname = ADDON

    server_url: bpy.props.StringProperty(
        name="Server URL", default="",
        description="draped's control URL (ipc://PATH, tcp://HOST:PORT, tls+tcp://HOST:PORT); "
                    "empty: $DRAPE_SERVER, else libdrape's default tcp://127.0.0.1:7450")
    token_file: bpy.props.StringProperty(
        name="Token file", subtype="FILE_PATH", default="",
        description="File holding the server's auth token (draped --auth-token-file); empty: none")
    tls_ca: bpy.props.StringProperty(
        name="TLS CA", subtype="FILE_PATH", default="",
        description="PEM CA certificate the server's certificate must be signed by (tls+tcp:// URLs)")
    tls_cert: bpy.props.StringProperty(
        name="TLS certificate", subtype="FILE_PATH", default="",
        description="PEM client certificate, for a server that asks for one")
    tls_key: bpy.props.StringProperty(
        name="TLS key", subtype="FILE_PATH", default="",
        description="PEM private key of the client certificate")
    library: bpy.props.StringProperty(
        name="libdrape", subtype="FILE_PATH", default="",
        description="Path of libdrape.so when it is not where the system finds it (sets DRAPE_LIBRARY)")

    def draw(self, context):
        col = self.layout.column()
        for name in ("server_url", "token_file", "tls_ca", "tls_cert", "tls_key", "library"):
            col.prop(self, name)


def get(context=None):
    context = context or bpy.context
    return context.preferences.addons[ADDON].preferences


def register():
    bpy.utils.register_class(DrapePreferences)


def unregister():
    bpy.utils.unregister_class(DrapePreferences)
